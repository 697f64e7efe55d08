"""Java compatibility harness for rocketmq-py.

The official RocketMQ Java programs are the reference the Python implementation is compared with:

* build.ensure_built()            builds compat-tests/java with Maven (once, when sources changed)
* processes.JavaNameServer/JavaBroker   official name server / broker JVMs on free loopback ports
* docker_backend                  the same servers from the apache/rocketmq image (ROCKETMQ_COMPAT_BACKEND=docker)
* peers.run_peer / mqadmin / CodecService   official client, admin tool and codec, driven from Python
  (mqadmin_patiently: again when a loaded machine made the tool's own request time out)
* pipelined.PipelinedLoad          saturates a broker with pipelined sends (also the capacity benchmark's sender)
* side_by_side.run_side_by_side   one client scenario against the Java broker and ours at once
* cpu.process_cpu_s               a process's CPU seconds from /proc (the benchmarks' CPU per message)
* cpu.process_tree_cpu_s          the same for a process and its live descendants (a broker and its fronts)
* cpu.main_thread_cpu_s           a process's main thread alone (our servers' event loop)

compat-tests/conftest.py turns these into pytest fixtures.
"""

from .backend import backend_name, server_classes
from .build import HarnessUnavailable, JavaBuild, ensure_built
from .names import unique_name
from .peers import (CodecError, CodecService, PeerError, consumer_lags, mqadmin, mqadmin_patiently, progress_lags,
                    run_peer)
from .processes import JavaBroker, JavaNameServer, StartupError

__all__ = [
    "CodecError", "CodecService", "HarnessUnavailable", "JavaBroker", "JavaBuild", "JavaNameServer", "PeerError",
    "StartupError", "backend_name", "consumer_lags", "ensure_built", "mqadmin", "mqadmin_patiently", "progress_lags",
    "run_peer", "server_classes", "unique_name",
]
