"""The name server's request handlers (Java's namesrv/processor/DefaultRequestProcessor).

One method per request code, registered in a :class:`ProcessorTable`; codes
nobody registered are answered REQUEST_CODE_NOT_SUPPORTED by the table (Java's
name server leaves them unanswered). Answers, remarks and body encodings
follow Java: route bodies quote their broker-id keys only for requesters of
version 4.9.4 (401) and later or that ask for standard JSON; cluster info is
always fastjson's unquoted form.
"""
from __future__ import annotations

import logging
import zlib
from typing import Awaitable, Callable

from rocketmq_py.common import json_shape
from rocketmq_py.common.codes import RequestCode, ResponseCode
from rocketmq_py.common.config_file import (
    apply_properties,
    config_to_properties,
    format_properties,
    parse_properties,
    write_file_safely,
)
from rocketmq_py.common.data_version import DataVersion
from rocketmq_py.common.headers.namesrv import (
    AddWritePermOfBrokerRequestHeader,
    AddWritePermOfBrokerResponseHeader,
    DeleteKVConfigRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    PutKVConfigRequestHeader,
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnRegisterBrokerRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)
from rocketmq_py.common.kv import NAMESPACE_ORDER_TOPIC_CONFIG
from rocketmq_py.common.topic_config import DATA_VERSION_SHAPE, TOPIC_CONFIG_WRAPPER_SHAPE, TopicConfigSerializeWrapper
from rocketmq_py.errors import BadRequestError
from rocketmq_py.namesrv.config import NamesrvConfig
from rocketmq_py.namesrv.kv_config import KVConfigManager
from rocketmq_py.namesrv.register_body import RegisterBrokerBody
from rocketmq_py.namesrv.route_info import RouteInfoManager
from rocketmq_py.namesrv.validation import validate_registration
from rocketmq_py.remoting import ProcessorTable, RemotingCommand, RequestContext, create_response

_log = logging.getLogger(__name__)

#: MQVersion ordinals the name server acts on.
VERSION_3_0_11 = 37
VERSION_4_9_4 = 401

APPLY_TOPIC_URL = "http://rocketmq.apache.org/docs/faq/"

Handler = Callable[[RequestContext, RemotingCommand], Awaitable[RemotingCommand]]


def _ok(request: RemotingCommand, ext_fields: dict[str, str] | None = None,
        body: bytes | None = None) -> RemotingCommand:
    return create_response(request, ResponseCode.SUCCESS, None, ext_fields, body)


def _body_crc32(body: bytes | None) -> int:
    return zlib.crc32(body) & 0x7FFFFFFF if body else 0


class NamesrvProcessor:
    """Serves the name server request codes over a route manager, a KV store and the config."""

    def __init__(self, config: NamesrvConfig, routes: RouteInfoManager, kv_config: KVConfigManager) -> None:
        self.config = config
        self.routes = routes
        self.kv_config = kv_config
        self._handlers: dict[int, Handler] = {
            RequestCode.PUT_KV_CONFIG: self.put_kv_config,
            RequestCode.GET_KV_CONFIG: self.get_kv_config,
            RequestCode.DELETE_KV_CONFIG: self.delete_kv_config,
            RequestCode.QUERY_DATA_VERSION: self.query_data_version,
            RequestCode.REGISTER_BROKER: self.register_broker,
            RequestCode.UNREGISTER_BROKER: self.unregister_broker,
            RequestCode.GET_ROUTEINFO_BY_TOPIC: self.get_route_info_by_topic,
            RequestCode.GET_BROKER_CLUSTER_INFO: self.get_broker_cluster_info,
            RequestCode.WIPE_WRITE_PERM_OF_BROKER: self.wipe_write_perm_of_broker,
            RequestCode.ADD_WRITE_PERM_OF_BROKER: self.add_write_perm_of_broker,
            RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: self.get_all_topic_list,
            RequestCode.DELETE_TOPIC_IN_NAMESRV: self.delete_topic_in_namesrv,
            RequestCode.GET_KVLIST_BY_NAMESPACE: self.get_kv_list_by_namespace,
            RequestCode.GET_TOPICS_BY_CLUSTER: self.get_topics_by_cluster,
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS: self.get_system_topic_list,
            RequestCode.GET_UNIT_TOPIC_LIST: self.get_unit_topic_list,
            RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST: self.get_has_unit_sub_topic_list,
            RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: self.get_has_unit_sub_un_unit_topic_list,
            RequestCode.UPDATE_NAMESRV_CONFIG: self.update_config,
            RequestCode.GET_NAMESRV_CONFIG: self.get_config,
        }

    def register_into(self, table: ProcessorTable) -> ProcessorTable:
        for code, handler in self._handlers.items():
            table.register(code, handler)
        return table

    # --- KV config ---------------------------------------------------------------------------

    async def put_kv_config(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = PutKVConfigRequestHeader.from_command(request)
        self.kv_config.put(header.namespace, header.key, header.value)
        return _ok(request)

    async def get_kv_config(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = GetKVConfigRequestHeader.from_command(request)
        value = self.kv_config.get(header.namespace, header.key)
        if value is not None:
            return _ok(request, GetKVConfigResponseHeader(value=value).to_ext_fields())
        return create_response(request, ResponseCode.QUERY_NOT_FOUND,
                               f"No config item, Namespace: {header.namespace} Key: {header.key}")

    async def delete_kv_config(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = DeleteKVConfigRequestHeader.from_command(request)
        self.kv_config.delete(header.namespace, header.key)
        return _ok(request)

    async def get_kv_list_by_namespace(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = GetKVListByNamespaceRequestHeader.from_command(request)
        body = self.kv_config.get_kv_list_by_namespace(header.namespace)
        if body is not None:
            return _ok(request, body=body)
        return create_response(request, ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {header.namespace}")

    # --- brokers -----------------------------------------------------------------------------

    async def register_broker(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = RegisterBrokerRequestHeader.from_command(request)
        if header.body_crc32 and _body_crc32(request.body) != header.body_crc32:
            _log.warning("REGISTER_BROKER from %s: the body CRC32 does not match", ctx.remote_address)
            return create_response(request, ResponseCode.SYSTEM_ERROR, "crc32 not match")
        filter_servers: list[str] | None = None
        if not request.body:
            wrapper = TopicConfigSerializeWrapper(data_version=DataVersion(0, 0))
        elif request.version >= VERSION_3_0_11:
            register_body = RegisterBrokerBody.decode(request.body, header.compressed)
            wrapper, filter_servers = register_body.topic_config_wrapper, register_body.filter_server_list
        else:
            data = json_shape.decode(request.body, TOPIC_CONFIG_WRAPPER_SHAPE, "TopicConfigSerializeWrapper")
            try:
                wrapper = TopicConfigSerializeWrapper.from_json(data)
            except ValueError as error:
                raise BadRequestError(f"bad register broker body: {error}") from None
        if request.version >= VERSION_3_0_11 and filter_servers is None:
            filter_servers = []
        validate_registration(header, wrapper, filter_servers)
        result = self.routes.register_broker(
            header.cluster_name, header.broker_addr, header.broker_name, header.broker_id,
            header.ha_server_addr, wrapper, filter_servers, ctx.connection,
        )
        response_header = RegisterBrokerResponseHeader(result.ha_server_addr, result.master_addr)
        body = self.kv_config.get_kv_list_by_namespace(NAMESPACE_ORDER_TOPIC_CONFIG)
        return _ok(request, response_header.to_ext_fields(), body)

    async def unregister_broker(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = UnRegisterBrokerRequestHeader.from_command(request)
        self.routes.unregister_broker(header.cluster_name, header.broker_addr, header.broker_name, header.broker_id)
        return _ok(request)

    async def query_data_version(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = QueryDataVersionRequestHeader.from_command(request)
        version = DataVersion.from_json(json_shape.decode(request.body, DATA_VERSION_SHAPE, "DataVersion"))
        changed = self.routes.is_broker_topic_config_changed(header.broker_addr, version)
        if not changed:
            self.routes.update_broker_info_update_timestamp(header.broker_addr)
        known = self.routes.query_broker_topic_config(header.broker_addr)
        body = known.encode() if known is not None else None
        return _ok(request, QueryDataVersionResponseHeader(changed=changed).to_ext_fields(), body)

    async def wipe_write_perm_of_broker(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = WipeWritePermOfBrokerRequestHeader.from_command(request)
        count = self.routes.wipe_write_perm_of_broker(header.broker_name)
        _log.info("wiped the write permission of broker %s (%d topics), asked by %s",
                  header.broker_name, count, ctx.remote_address)
        return _ok(request, WipeWritePermOfBrokerResponseHeader(wipe_topic_count=count).to_ext_fields())

    async def add_write_perm_of_broker(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = AddWritePermOfBrokerRequestHeader.from_command(request)
        count = self.routes.add_write_perm_of_broker(header.broker_name)
        _log.info("added the write permission of broker %s (%d topics), asked by %s",
                  header.broker_name, count, ctx.remote_address)
        return _ok(request, AddWritePermOfBrokerResponseHeader(add_topic_count=count).to_ext_fields())

    # --- routes and topics -------------------------------------------------------------------

    async def get_route_info_by_topic(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = GetRouteInfoRequestHeader.from_command(request)
        route = self.routes.pickup_topic_route_data(header.topic)
        if route is None:
            return create_response(
                request, ResponseCode.TOPIC_NOT_EXIST,
                f"No topic route info in name server for the topic: {header.topic}\n"
                f"See {APPLY_TOPIC_URL} for further details.",
            )
        if self.config.order_message_enable:
            route.order_topic_conf = self.kv_config.get(NAMESPACE_ORDER_TOPIC_CONFIG, header.topic)
        standard_json = request.version >= VERSION_4_9_4 or bool(header.accept_standard_json_only)
        return _ok(request, body=route.encode(standard_json=standard_json))

    async def get_broker_cluster_info(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        return _ok(request, body=self.routes.get_all_cluster_info().encode())

    async def get_all_topic_list(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        return _ok(request, body=self.routes.get_all_topic_list().encode())

    async def delete_topic_in_namesrv(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = DeleteTopicFromNamesrvRequestHeader.from_command(request)
        self.routes.delete_topic(header.topic, header.cluster_name)
        return _ok(request)

    async def get_topics_by_cluster(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        header = GetTopicsByClusterRequestHeader.from_command(request)
        return _ok(request, body=self.routes.get_topics_by_cluster(header.cluster).encode())

    async def get_system_topic_list(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        return _ok(request, body=self.routes.get_system_topic_list().encode())

    async def get_unit_topic_list(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        return _ok(request, body=self.routes.get_unit_topics().encode())

    async def get_has_unit_sub_topic_list(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        return _ok(request, body=self.routes.get_has_unit_sub_topic_list().encode())

    async def get_has_unit_sub_un_unit_topic_list(self, ctx: RequestContext,
                                                  request: RemotingCommand) -> RemotingCommand:
        return _ok(request, body=self.routes.get_has_unit_sub_un_unit_topic_list().encode())

    # --- the name server's own config ---------------------------------------------------------

    async def update_config(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        _log.info("UPDATE_NAMESRV_CONFIG from %s", ctx.remote_address)
        if request.body:
            try:
                properties = parse_properties(request.body.decode("utf-8"))
            except UnicodeDecodeError as error:
                return create_response(request, ResponseCode.SYSTEM_ERROR, f"UnsupportedEncodingException {error}")
            if self.config.black_listed_keys() & properties.keys():
                return create_response(request, ResponseCode.NO_PERMISSION, "Can not update config in black list.")
            try:
                unknown = apply_properties(self.config, properties)
            except ValueError as error:
                return create_response(request, ResponseCode.SYSTEM_ERROR, str(error))
            if unknown:
                _log.warning("UPDATE_NAMESRV_CONFIG ignored unknown keys %s", sorted(unknown))
            self._persist_config()
        return _ok(request)

    def _persist_config(self) -> None:
        if not self.config.config_store_path:
            return
        try:
            write_file_safely(self.config.config_store_path, format_properties(config_to_properties(self.config)))
        except OSError:
            _log.exception("persisting the name server config to %s failed", self.config.config_store_path)

    async def get_config(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        content = format_properties(config_to_properties(self.config))
        return _ok(request, body=content.encode("utf-8") if content else None)
