"""Helpers the tests share: servers and clusters on loopback, fake peers, frames and fixtures' building blocks.

Imported as ``support.<module>`` (pytest puts ``tests/`` on ``sys.path``, also when ci/wheel.sh runs the suite
against an installed wheel from another folder); ``tests/conftest.py`` stays where pytest looks for it.
"""
