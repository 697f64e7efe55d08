"""The compiled module's types are its twin's: one set of annotations for both (docs/design-twins.md).

tests/test_twins.py holds the compiled module to the twin's names and signatures, the differential tests to its
results."""
from rocketmq_py.broker._place_messages_py import *
