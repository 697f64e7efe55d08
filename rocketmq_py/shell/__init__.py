"""``rocketmq-py produce`` and ``rocketmq-py consume``: a topic from and to the shell, as ``kcat`` is for Kafka."""
