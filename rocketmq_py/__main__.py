"""``python -m rocketmq_py``: the same as the ``rocketmq-py`` command."""
import sys

from rocketmq_py.cli import main

sys.exit(main())
