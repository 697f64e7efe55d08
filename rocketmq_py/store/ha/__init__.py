"""Master-slave replication of the CommitLog, on Java 4.9's HA wire (store/ha/HAService, HAConnection).

* :class:`HAService` runs on a master: it listens on ``haListenPort`` and streams the CommitLog to
  every slave that connects (one :class:`HAConnection` each), and makes SYNC_MASTER puts wait for a
  slave's acknowledgment.
* :class:`HAClient` runs on a slave: it connects to the master's HA address, reports its CommitLog
  end, and appends what the master sends at exactly the offset it names.
"""
from rocketmq_py.store.ha.client import HAClient
from rocketmq_py.store.ha.connection import HAConnection
from rocketmq_py.store.ha.service import HAService

__all__ = ["HAClient", "HAConnection", "HAService"]
