package org.rocketmqpy.compat;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import com.alibaba.fastjson.parser.Feature;
import io.openmessaging.storage.dledger.entry.DLedgerEntry;
import io.openmessaging.storage.dledger.entry.DLedgerEntryCoder;
import io.openmessaging.storage.dledger.protocol.AppendEntryRequest;
import io.openmessaging.storage.dledger.protocol.AppendEntryResponse;
import io.openmessaging.storage.dledger.protocol.BatchAppendEntryRequest;
import io.openmessaging.storage.dledger.protocol.GetEntriesRequest;
import io.openmessaging.storage.dledger.protocol.GetEntriesResponse;
import io.openmessaging.storage.dledger.protocol.HeartBeatRequest;
import io.openmessaging.storage.dledger.protocol.HeartBeatResponse;
import io.openmessaging.storage.dledger.protocol.LeadershipTransferRequest;
import io.openmessaging.storage.dledger.protocol.LeadershipTransferResponse;
import io.openmessaging.storage.dledger.protocol.MetadataRequest;
import io.openmessaging.storage.dledger.protocol.MetadataResponse;
import io.openmessaging.storage.dledger.protocol.PullEntriesRequest;
import io.openmessaging.storage.dledger.protocol.PullEntriesResponse;
import io.openmessaging.storage.dledger.protocol.PushEntryRequest;
import io.openmessaging.storage.dledger.protocol.PushEntryResponse;
import io.openmessaging.storage.dledger.protocol.RequestOrResponse;
import io.openmessaging.storage.dledger.protocol.VoteRequest;
import io.openmessaging.storage.dledger.protocol.VoteResponse;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

/**
 * {@code dledger-golden}: reads one case per line on stdin and prints DLedger 0.3.1.2's encoding of it.
 *
 * <ul>
 * <li>{@code {"class":"VoteRequest","fields":{...}}}: the object built with the class's own setters (and
 * {@code addEntry} for a push's batch), answered as {@code {"json": base64 of JSON.toJSONBytes(object)}}
 * (what DLedgerRpcNettyService puts in a frame body);</li>
 * <li>{@code {"entry":{...}}}: {@code {"data": base64 of DLedgerEntryCoder.encode, "index": base64 of
 * encodeIndex}} (the bytes of the data and index files);</li>
 * <li>{@code {"frame":{"code":C,"opaque":O,"bodyBase64":B,"response":true|false}}}: the RemotingCommand that
 * DLedgerRpcNettyService builds for a request (createRequestCommand) or a response (handleResponse), as
 * {@code {"frame": base64 of encode()}}.</li>
 * </ul>
 * Peer maps are {@link HashMap}s, as MemberState's.
 */
final class DLedgerGolden {
    private DLedgerGolden() {
    }

    static void run(Args a) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.trim().isEmpty()) {
                continue;
            }
            Map<String, Object> reply = new LinkedHashMap<>();
            try {
                JSONObject spec = JSON.parseObject(line, Feature.OrderedField);
                if (spec.containsKey("entry")) {
                    DLedgerEntry entry = entry(spec.getJSONObject("entry"));
                    ByteBuffer data = ByteBuffer.allocate(DLedgerEntry.BODY_OFFSET + entry.getBody().length);
                    DLedgerEntryCoder.encode(entry, data);
                    ByteBuffer index = ByteBuffer.allocate(32);
                    DLedgerEntryCoder.encodeIndex(entry.getPos(), entry.getSize(), entry.getMagic(), entry.getIndex(),
                        entry.getTerm(), index);
                    reply.put("data", Util.b64(bytes(data)));
                    reply.put("index", Util.b64(bytes(index)));
                } else if (spec.containsKey("frame")) {
                    reply.put("frame", Util.b64(bytes(frame(spec.getJSONObject("frame")).encode())));
                } else {
                    Object built = build(spec.getString("class"), spec.getJSONObject("fields"));
                    reply.put("json", Util.b64(JSON.toJSONBytes(built)));
                }
            } catch (Throwable t) {
                reply.put("error", Peer.Out.describe(t));
            }
            Peer.Out.emit(reply);
        }
    }

    private static byte[] bytes(ByteBuffer buffer) {
        byte[] out = new byte[buffer.remaining()];
        buffer.get(out);
        return out;
    }

    private static RemotingCommand frame(JSONObject f) {
        RemotingCommand command;
        if (f.getBooleanValue("response")) {
            // DLedgerRpcNettyService.handleResponse, then writeResponse's markResponseType
            command = RemotingCommand.createResponseCommand(200, null);
            command.setOpaque(f.getIntValue("opaque"));
            command.markResponseType();
        } else {
            command = RemotingCommand.createRequestCommand(f.getIntValue("code"), null);
            command.setOpaque(f.getIntValue("opaque"));
        }
        command.setBody(Util.unb64(f.getString("bodyBase64")));
        return command;
    }

    static DLedgerEntry entry(JSONObject f) {
        DLedgerEntry e = new DLedgerEntry();
        e.setMagic(f.getIntValue("magic"));
        e.setSize(f.getIntValue("size"));
        e.setIndex(f.getLongValue("index"));
        e.setTerm(f.getLongValue("term"));
        e.setPos(f.getLongValue("pos"));
        e.setChannel(f.getIntValue("channel"));
        e.setChainCrc(f.getIntValue("chainCrc"));
        e.setBodyCrc(f.getIntValue("bodyCrc"));
        if (f.containsKey("body")) {
            e.setBody(Util.unb64(f.getString("body")));
        }
        return e;
    }

    private static List<DLedgerEntry> entries(JSONArray array) {
        List<DLedgerEntry> out = new ArrayList<>();
        for (int i = 0; i < array.size(); i++) {
            out.add(entry(array.getJSONObject(i)));
        }
        return out;
    }

    private static void base(RequestOrResponse r, JSONObject f) {
        if (f.containsKey("group")) {
            r.setGroup(f.getString("group"));
        }
        if (f.containsKey("remoteId")) {
            r.setRemoteId(f.getString("remoteId"));
        }
        if (f.containsKey("localId")) {
            r.setLocalId(f.getString("localId"));
        }
        if (f.containsKey("code")) {
            r.setCode(f.getIntValue("code"));
        }
        if (f.containsKey("leaderId")) {
            r.setLeaderId(f.getString("leaderId"));
        }
        if (f.containsKey("term")) {
            r.setTerm(f.getLongValue("term"));
        }
    }

    static Object build(String cls, JSONObject f) {
        switch (cls) {
            case "MetadataRequest": {
                MetadataRequest r = new MetadataRequest();
                base(r, f);
                return r;
            }
            case "MetadataResponse": {
                MetadataResponse r = new MetadataResponse();
                base(r, f);
                if (f.containsKey("peers")) {
                    Map<String, String> peers = new HashMap<>();
                    JSONObject given = f.getJSONObject("peers");
                    for (String key : given.keySet()) {
                        peers.put(key, given.getString(key));
                    }
                    r.setPeers(peers);
                }
                return r;
            }
            case "AppendEntryRequest": {
                AppendEntryRequest r = new AppendEntryRequest();
                base(r, f);
                if (f.containsKey("body")) {
                    r.setBody(Util.unb64(f.getString("body")));
                }
                return r;
            }
            case "BatchAppendEntryRequest": {
                BatchAppendEntryRequest r = new BatchAppendEntryRequest();
                base(r, f);
                if (f.containsKey("body")) {
                    r.setBody(Util.unb64(f.getString("body")));
                }
                if (f.containsKey("batchMsgs")) {
                    List<byte[]> bodies = new ArrayList<>();
                    JSONArray given = f.getJSONArray("batchMsgs");
                    for (int i = 0; i < given.size(); i++) {
                        bodies.add(Util.unb64(given.getString(i)));
                    }
                    r.setBatchMsgs(bodies);
                }
                return r;
            }
            case "AppendEntryResponse": {
                AppendEntryResponse r = new AppendEntryResponse();
                base(r, f);
                if (f.containsKey("index")) {
                    r.setIndex(f.getLongValue("index"));
                }
                if (f.containsKey("pos")) {
                    r.setPos(f.getLongValue("pos"));
                }
                return r;
            }
            case "GetEntriesRequest": {
                GetEntriesRequest r = new GetEntriesRequest();
                base(r, f);
                if (f.containsKey("beginIndex")) {
                    r.setBeginIndex(f.getLong("beginIndex"));
                }
                if (f.containsKey("maxSize")) {
                    r.setMaxSize(f.getIntValue("maxSize"));
                }
                if (f.containsKey("indexList")) {
                    List<Long> indexes = new ArrayList<>();
                    JSONArray given = f.getJSONArray("indexList");
                    for (int i = 0; i < given.size(); i++) {
                        indexes.add(given.getLong(i));
                    }
                    r.setIndexList(indexes);
                }
                return r;
            }
            case "GetEntriesResponse": {
                GetEntriesResponse r = new GetEntriesResponse();
                base(r, f);
                if (f.containsKey("entries")) {
                    r.setEntries(entries(f.getJSONArray("entries")));
                }
                return r;
            }
            case "PullEntriesRequest": {
                PullEntriesRequest r = new PullEntriesRequest();
                base(r, f);
                if (f.containsKey("nodeId")) {
                    r.setNodeId(f.getString("nodeId"));
                }
                if (f.containsKey("beginIndex")) {
                    r.setBeginIndex(f.getLong("beginIndex"));
                }
                return r;
            }
            case "PullEntriesResponse": {
                PullEntriesResponse r = new PullEntriesResponse();
                base(r, f);
                if (f.containsKey("entries")) {
                    r.setEntries(entries(f.getJSONArray("entries")));
                }
                return r;
            }
            case "VoteRequest": {
                VoteRequest r = new VoteRequest();
                base(r, f);
                if (f.containsKey("ledgerEndIndex")) {
                    r.setLedgerEndIndex(f.getLongValue("ledgerEndIndex"));
                }
                if (f.containsKey("ledgerEndTerm")) {
                    r.setLedgerEndTerm(f.getLongValue("ledgerEndTerm"));
                }
                return r;
            }
            case "VoteResponse": {
                VoteResponse r = new VoteResponse();
                base(r, f);
                if (f.containsKey("voteResult")) {
                    r.setVoteResult(VoteResponse.RESULT.valueOf(f.getString("voteResult")));
                }
                return r;
            }
            case "HeartBeatRequest": {
                HeartBeatRequest r = new HeartBeatRequest();
                base(r, f);
                return r;
            }
            case "HeartBeatResponse": {
                HeartBeatResponse r = new HeartBeatResponse();
                base(r, f);
                return r;
            }
            case "PushEntryRequest": {
                PushEntryRequest r = new PushEntryRequest();
                base(r, f);
                if (f.containsKey("commitIndex")) {
                    r.setCommitIndex(f.getLongValue("commitIndex"));
                }
                if (f.containsKey("type")) {
                    r.setType(PushEntryRequest.Type.valueOf(f.getString("type")));
                }
                if (f.containsKey("entry")) {
                    r.setEntry(entry(f.getJSONObject("entry")));
                }
                if (f.containsKey("batchEntry")) {
                    for (DLedgerEntry e : entries(f.getJSONArray("batchEntry"))) {
                        r.addEntry(e);
                    }
                }
                return r;
            }
            case "PushEntryResponse": {
                PushEntryResponse r = new PushEntryResponse();
                base(r, f);
                if (f.containsKey("index")) {
                    r.setIndex(f.getLong("index"));
                }
                if (f.containsKey("beginIndex")) {
                    r.setBeginIndex(f.getLongValue("beginIndex"));
                }
                if (f.containsKey("endIndex")) {
                    r.setEndIndex(f.getLongValue("endIndex"));
                }
                if (f.containsKey("count")) {
                    r.setCount(f.getIntValue("count"));
                }
                return r;
            }
            case "LeadershipTransferRequest": {
                LeadershipTransferRequest r = new LeadershipTransferRequest();
                base(r, f);
                if (f.containsKey("transferId")) {
                    r.setTransferId(f.getString("transferId"));
                }
                if (f.containsKey("transfereeId")) {
                    r.setTransfereeId(f.getString("transfereeId"));
                }
                if (f.containsKey("takeLeadershipLedgerIndex")) {
                    r.setTakeLeadershipLedgerIndex(f.getLongValue("takeLeadershipLedgerIndex"));
                }
                return r;
            }
            case "LeadershipTransferResponse": {
                LeadershipTransferResponse r = new LeadershipTransferResponse();
                base(r, f);
                return r;
            }
            default:
                throw new IllegalArgumentException("unknown DLedger class: " + cls);
        }
    }
}
