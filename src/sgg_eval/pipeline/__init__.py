"""The pipeline layer: the only code that knows ``params.yaml``, Hydra, DVC and MLflow.

``config`` (composing conf/, loading params), ``params_check`` (the schema), ``entries`` (evaluation entry
names), ``stages`` and ``report_stages`` (the bodies of the DVC stages: file layout, one library call
each), ``fingerprint`` (prediction files as content dependencies), ``sweep`` (Hydra multiruns) and
``tracking`` (MLflow). The library below (``data``, ``formats``, ``metrics``, ``stats``, ``pko``,
``simulate``, ``report``, ``sources``, ``evaluate``, ``splits``) never imports this package
(tests/test_layers.py).
"""
