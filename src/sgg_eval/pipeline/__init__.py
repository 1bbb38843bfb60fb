"""The pipeline layer: the only code that knows ``params.yaml``, Hydra, DVC and MLflow.

``config`` and ``catalogue`` (composing conf/, loading params), ``catalogue_files`` (a catalogue file per
product, what the stages depend on), ``params_check``, ``model_params``,
``psg_params`` and ``param_types`` (the schema), ``param_reads`` (what each stage reads), ``entries``
(evaluation entry names), ``paths`` (the file layout), the stage families (``model_stages``, ``eval_stages``,
``report_stages``, ``psg_stages``, ``psg_reports``, ``site_pages``: the bodies of the DVC stages, one library
call each), ``fingerprint`` (prediction files as content dependencies), ``sweep`` (Hydra multiruns) and
``tracking`` (MLflow). The library below (``core``, ``io``, ``arrays``, ``data``, ``formats``, ``metrics``,
``boxes``, ``panoptic``, ``simulate``, ``report``) never imports this package (tests/test_layers.py).
"""
