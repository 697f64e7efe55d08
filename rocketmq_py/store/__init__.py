"""The message store: CommitLog, ConsumeQueue, index, checkpoint, flush and clean services.

Python control flow over the byte layouts of :mod:`rocketmq_py.store.layout`.
"""
