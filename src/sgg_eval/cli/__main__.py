"""``python -m sgg_eval.cli``: the ``sgg-eval`` command."""

import sys

from sgg_eval.cli import main

sys.exit(main())
