"""The ACL admin requests (the corresponding handlers of Java's broker/processor/AdminBrokerProcessor,
rocketmq-all-4.9.8): UPDATE_AND_CREATE_ACL_CONFIG (50), DELETE_ACL_CONFIG (51), GET_BROKER_CLUSTER_ACL_INFO (52)
and UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53), what ``mqadmin updateAclConfig``, ``deleteAclConfig``,
``clusterAclConfigVersion`` and ``updateGlobalWhiteAddr`` send; and GET_BROKER_CLUSTER_ACL_CONFIG (54), which the
4.9.7 broker answers (4.9.8 removed it) and the dashboard's ACL page sends.

A failure is answered with the code of its request (209, 210, 211) and the
reason as remark, as Java does. Whether the sender may send these at all is
the ACL check's business (it needs a signed request; Java 4.9 does not ask
for an admin account here).
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from rocketmq_py import codec
from rocketmq_py.acl import AclError, PlainAccessConfig, PlainAccessValidator
from rocketmq_py.acl.plain_file import java_split
from rocketmq_py.broker.processors.common import fail, ok
from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.common.headers.acl import (
    CreateAccessConfigRequestHeader,
    DeleteAccessConfigRequestHeader,
    GetBrokerAclConfigResponseHeader,
    UpdateGlobalWhiteAddrsConfigRequestHeader,
)
from rocketmq_py.remoting import ProcessorTable, RemotingCommand, RequestContext

if TYPE_CHECKING:
    from rocketmq_py.broker.controller import BrokerController

_log = logging.getLogger(__name__)

ACL_DISABLED = "ACL is not enabled on this broker: set aclEnable=true in broker.conf"


class AclAdminProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def register_into(self, table: ProcessorTable) -> None:
        handlers = {
            RequestCode.UPDATE_AND_CREATE_ACL_CONFIG: self.update_and_create_acl_config,
            RequestCode.DELETE_ACL_CONFIG: self.delete_acl_config,
            RequestCode.GET_BROKER_CLUSTER_ACL_INFO: self.get_broker_acl_config_version,
            RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: self.update_global_white_addrs_config,
            RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG: self.get_broker_cluster_acl_config,
        }
        for code, handler in handlers.items():
            table.register(code, handler)

    @property
    def _validator(self) -> PlainAccessValidator | None:
        return self.broker.acl

    async def update_and_create_acl_config(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = CreateAccessConfigRequestHeader.from_command(request)
        config = PlainAccessConfig(
            access_key=header.access_key, secret_key=header.secret_key,
            white_remote_address=header.white_remote_address, admin=header.admin,
            default_topic_perm=header.default_topic_perm, default_group_perm=header.default_group_perm,
            topic_perms=java_split(header.topic_perms, ","), group_perms=java_split(header.group_perms, ","),
        )
        code = ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED
        validator = self._validator
        if validator is None:
            return fail(request, code, ACL_DISABLED)
        try:
            validator.manager.update_account(config)
        except AclError as error:
            _log.warning("updating the ACL account %s for %s failed: %s", header.access_key, ctx.remote_address, error)
            return fail(request, code, str(error))
        _log.info("ACL account %s updated by %s", header.access_key, ctx.remote_address)
        return ok(request)

    async def delete_acl_config(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = DeleteAccessConfigRequestHeader.from_command(request)
        code = ResponseCode.DELETE_ACL_CONFIG_FAILED
        validator = self._validator
        if validator is None:
            return fail(request, code, ACL_DISABLED)
        _log.info("DeleteAccessConfig called by %s", ctx.remote_address)
        try:
            deleted = validator.manager.delete_account(header.access_key)
        except AclError as error:
            return fail(request, code, str(error))
        if not deleted:
            remark = f"The accesskey[{header.access_key}] corresponding to accessConfig has been deleted failed."
            _log.warning("%s", remark)
            return fail(request, code, remark)
        return ok(request)

    async def update_global_white_addrs_config(self, ctx: RequestContext,
                                               request: RemotingCommand) -> RemotingCommand:
        header = UpdateGlobalWhiteAddrsConfigRequestHeader.from_command(request)
        code = ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED
        validator = self._validator
        if validator is None:
            return fail(request, code, ACL_DISABLED)
        try:
            updated = validator.manager.update_global_white_addrs(java_split(header.global_white_addrs, ","),
                                                                  header.acl_file_full_path)
        except AclError as error:
            return fail(request, code, str(error))
        if not updated:
            remark = f"The globalWhiteAddresses[{header.global_white_addrs}] has been updated failed."
            _log.warning("%s", remark)
            return fail(request, code, remark)
        _log.info("global white addresses set to %s by %s", header.global_white_addrs, ctx.remote_address)
        return ok(request)

    async def get_broker_acl_config_version(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        validator = self._validator
        if validator is None:
            # Java's broker sends no answer at all here (a NullPointerException it only logs).
            return fail(request, ResponseCode.SYSTEM_ERROR, ACL_DISABLED)
        manager = validator.manager
        config = self.broker.config
        header = GetBrokerAclConfigResponseHeader(
            version=codec.json_dumps(manager.default_version.to_json()),
            all_acl_file_version=codec.json_dumps({path: version.to_json()
                                                   for path, version in manager.versions.items()}),
            broker_name=config.broker_name, broker_addr=self.broker.broker_addr,
            cluster_name=config.broker_cluster_name,
        )
        return ok(request, header.to_ext_fields())

    async def get_broker_cluster_acl_config(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        """Every ACL file's global white addresses and accounts, secret keys included, as Java 4.9.7 answers."""
        validator = self._validator
        if validator is None:
            # As for 52, Java's broker sends no answer at all here (a NullPointerException it only logs).
            return fail(request, ResponseCode.SYSTEM_ERROR, ACL_DISABLED)
        try:
            white, accounts = validator.manager.all_acl_config()
        except AclError as error:
            _log.error("reading the ACL files for %s failed: %s", ctx.remote_address, error)
            return fail(request, ResponseCode.SYSTEM_ERROR, str(error))
        body = {"globalWhiteAddrs": white, "plainAccessConfigs": [account.to_json() for account in accounts]}
        return ok(request, body=codec.json_dumps(body).encode())
