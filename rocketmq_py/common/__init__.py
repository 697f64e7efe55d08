"""Protocol concepts shared by clients, broker and name server (Java's rocketmq-common)."""
