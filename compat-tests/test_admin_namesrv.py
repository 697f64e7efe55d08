"""Issue 32, the name server's KV config: what mqadmin writes our Admin reads, what our Admin writes mqadmin
deletes (and our CLI does the same), on Java's name server and on ours."""
from __future__ import annotations

import pytest
from harness import mqadmin, unique_name
from harness.admin_text import rocketmq_py

from rocketmq_py import Admin
from rocketmq_py.errors import QueryNotFoundError


def test_kv_config_written_and_deleted_by_either_tool(servers):
    namesrv, _ = servers
    namespace = unique_name("ns")
    with Admin(namesrv_addr=namesrv.addr, instance_name=unique_name("admin")) as admin:
        out = mqadmin("updateKvConfig", "-s", namespace, "-k", "by-mqadmin", "-v", "one", namesrv=namesrv.addr)
        assert out == "create or update kv config to namespace success.\n"
        assert admin.get_kv_config(namespace, "by-mqadmin") == "one"
        admin.create_and_update_kv_config(namespace, "by-admin", "two")
        assert admin.get_kv_list_by_namespace(namespace).table == {"by-mqadmin": "one", "by-admin": "two"}

        out = mqadmin("deleteKvConfig", "-s", namespace, "-k", "by-admin", namesrv=namesrv.addr)
        assert out == "delete kv config from namespace success.\n"
        with pytest.raises(QueryNotFoundError):
            admin.get_kv_config(namespace, "by-admin")
        ours = rocketmq_py("admin", "updateKvConfig", "-s", namespace, "-k", "by-cli", "-v", "three",
                           namesrv=namesrv.addr)
        assert ours == "create or update kv config to namespace success.\n"
        admin.delete_kv_config(namespace, "by-mqadmin")
        assert admin.get_kv_list_by_namespace(namespace).table == {"by-cli": "three"}
