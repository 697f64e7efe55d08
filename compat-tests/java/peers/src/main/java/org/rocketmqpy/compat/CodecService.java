package org.rocketmqpy.compat;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import com.alibaba.fastjson.parser.Feature;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.common.compression.CompressionType;
import org.apache.rocketmq.common.compression.Compressor;
import org.apache.rocketmq.common.compression.CompressorFactory;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageClientIDSetter;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageId;
import org.apache.rocketmq.remoting.protocol.LanguageCode;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.SerializeType;

/**
 * {@code codec-service}: reads one JSON request per line on stdin and answers with one JSON line
 * on stdout, until stdin closes. Each op calls the official 4.9.8 codec code. A failing request
 * answers {@code {"error":"<class>: <message>"}} and the service keeps going.
 *
 * <p>Property maps given in requests are copied into a java.util.HashMap (iteration order of a
 * real Message) unless the request has {@code "ordered": true}, which keeps the JSON order.
 */
final class CodecService {
    /** NettyDecoder's default frame limit (com.rocketmq.remoting.frameMaxLength). */
    private static final int FRAME_MAX = 16777216;

    private CodecService() {
    }

    static void run(Args a) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.trim().isEmpty()) {
                continue;
            }
            Map<String, Object> reply;
            try {
                reply = handle(JSON.parseObject(line, Feature.OrderedField));
            } catch (Throwable t) {
                reply = new LinkedHashMap<>();
                reply.put("error", Peer.Out.describe(t));
            }
            Peer.Out.emit(reply);
        }
    }

    static Map<String, Object> handle(JSONObject req) throws Exception {
        String op = req.getString("op");
        Map<String, Object> r = new LinkedHashMap<>();
        if (op == null) {
            throw new IllegalArgumentException("missing op");
        }
        switch (op) {
            case "ping":
                r.put("pong", true);
                break;
            case "encodeCommand":
                r.put("frameBase64", Util.b64(encodeCommand(req)));
                break;
            case "decodeCommand":
                return decodeCommand(Util.unb64(req.getString("frameBase64")));
            case "propertiesToString":
                r.put("string", MessageDecoder.messageProperties2String(props(req, "properties")));
                break;
            case "stringToProperties":
                r.put("properties", MessageDecoder.string2messageProperties(req.getString("string")));
                break;
            case "encodeBatch":
                r.put("bodyBase64", Util.b64(MessageDecoder.encodeMessages(batch(req))));
                break;
            case "decodeBatch":
                r.put("messages", decodeBatch(Util.unb64(req.getString("bodyBase64"))));
                break;
            case "createUniqId":
                r.put("id", MessageClientIDSetter.createUniqID());
                break;
            case "parseUniqId": {
                String id = req.getString("id");
                r.put("ip", MessageClientIDSetter.getIPStrFromID(id));
                r.put("timestamp", MessageClientIDSetter.getNearlyTimeFromID(id).getTime());
                break;
            }
            case "createOffsetMsgId": {
                InetSocketAddress sa = new InetSocketAddress(InetAddress.getByName(req.getString("host")),
                    req.getIntValue("port"));
                r.put("id", MessageDecoder.createMessageId(sa, req.getLongValue("offset")));
                break;
            }
            case "decodeOffsetMsgId": {
                MessageId id = MessageDecoder.decodeMessageId(req.getString("id"));
                InetSocketAddress sa = (InetSocketAddress) id.getAddress();
                r.put("host", sa.getAddress().getHostAddress());
                r.put("port", sa.getPort());
                r.put("offset", id.getOffset());
                break;
            }
            case "encodeStoreRecord":
                r.put("recordBase64", Util.b64(MessageDecoder.encode(storeRecord(req),
                    req.getBooleanValue("needCompress"))));
                break;
            case "decodeStoreRecords":
                r.put("messages", decodeStoreRecords(Util.unb64(req.getString("bodyBase64")),
                    !req.containsKey("decompress") || req.getBooleanValue("decompress"),
                    !req.containsKey("readBody") || req.getBooleanValue("readBody")));
                break;
            case "compress":
                r.put("bodyBase64", Util.b64(compressor(req).compress(Util.unb64(req.getString("bodyBase64")),
                    req.containsKey("level") ? req.getIntValue("level") : 5)));
                break;
            case "decompress":
                r.put("bodyBase64", Util.b64(compressor(req).decompress(Util.unb64(req.getString("bodyBase64")))));
                break;
            case "stringHash":
                r.put("hash", req.getString("s").hashCode());
                break;
            case "crc32":
                r.put("crc", UtilAll.crc32(Util.unb64(req.getString("bodyBase64"))));
                break;
            default:
                throw new IllegalArgumentException("unknown op: " + op);
        }
        return r;
    }

    /** The frame as NettyEncoder writes it: fastEncodeHeader, then the body. */
    static byte[] encodeCommand(JSONObject req) {
        RemotingCommand cmd = RemotingCommand.createRequestCommand(req.getIntValue("code"), null);
        if (req.containsKey("language")) {
            cmd.setLanguage(LanguageCode.valueOf(req.getString("language")));
        }
        cmd.setVersion(req.getIntValue("version"));
        cmd.setOpaque(req.getIntValue("opaque"));
        cmd.setFlag(req.getIntValue("flag"));
        cmd.setRemark(req.getString("remark"));
        JSONObject ext = req.getJSONObject("extFields");
        if (ext != null) {
            cmd.setExtFields(new HashMap<String, String>());
            for (Map.Entry<String, Object> e : ext.entrySet()) {
                cmd.addExtField(e.getKey(), e.getValue() == null ? null : String.valueOf(e.getValue()));
            }
        }
        cmd.setBody(Util.unb64(req.getString("bodyBase64")));
        cmd.setSerializeTypeCurrentRPC(SerializeType.valueOf(req.getString("serialize") == null
            ? "JSON" : req.getString("serialize")));
        ByteBuf buf = Unpooled.buffer();
        cmd.fastEncodeHeader(buf);
        if (cmd.getBody() != null) {
            buf.writeBytes(cmd.getBody());
        }
        byte[] out = new byte[buf.readableBytes()];
        buf.readBytes(out);
        return out;
    }

    /** Like NettyDecoder: read the 4-byte length, strip it, RemotingCommand.decode the rest. */
    static Map<String, Object> decodeCommand(byte[] frame) throws Exception {
        if (frame.length < 4) {
            throw new IllegalArgumentException("frame shorter than the 4-byte length prefix");
        }
        ByteBuffer bb = ByteBuffer.wrap(frame);
        int length = bb.getInt();
        if (length < 0 || (long) length + 4 > FRAME_MAX) {
            throw new IllegalArgumentException("frame length " + length + " exceeds the decoder limit");
        }
        if (length > frame.length - 4) {
            throw new IllegalArgumentException("incomplete frame: length " + length + ", have " + (frame.length - 4));
        }
        byte[] content = new byte[length];
        bb.get(content);
        Map<String, Object> r = Util.command(RemotingCommand.decode(content));
        if (bb.hasRemaining()) {
            r.put("trailingBytes", bb.remaining());
        }
        return r;
    }

    static Map<String, String> props(JSONObject req, String key) {
        JSONObject p = req.getJSONObject(key);
        if (p == null) {
            return null;
        }
        Map<String, String> m = req.getBooleanValue("ordered")
            ? new LinkedHashMap<String, String>() : new HashMap<String, String>();
        for (Map.Entry<String, Object> e : p.entrySet()) {
            m.put(e.getKey(), e.getValue() == null ? null : String.valueOf(e.getValue()));
        }
        return m;
    }

    static List<Message> batch(JSONObject req) {
        List<Message> list = new ArrayList<>();
        JSONArray arr = req.getJSONArray("messages");
        for (int i = 0; i < arr.size(); i++) {
            JSONObject o = arr.getJSONObject(i);
            o.put("ordered", req.getBooleanValue("ordered"));
            Message m = new Message();
            m.setTopic(o.getString("topic"));
            m.setFlag(o.getIntValue("flag"));
            m.setBody(Util.unb64(o.getString("bodyBase64")));
            Map<String, String> p = props(o, "properties");
            if (p != null) {
                MessageAccessor.setProperties(m, p);
            }
            list.add(m);
        }
        return list;
    }

    static List<Map<String, Object>> decodeBatch(byte[] body) throws Exception {
        List<Map<String, Object>> out = new ArrayList<>();
        for (Message m : MessageDecoder.decodeMessages(ByteBuffer.wrap(body))) {
            Map<String, Object> o = new LinkedHashMap<>();
            o.put("flag", m.getFlag());
            o.put("bodyBase64", Util.b64(m.getBody()));
            o.put("properties", m.getProperties());
            out.add(o);
        }
        return out;
    }

    static MessageExt storeRecord(JSONObject req) throws Exception {
        MessageExt m = new MessageExt();
        m.setTopic(req.getString("topic"));
        m.setQueueId(req.getIntValue("queueId"));
        m.setFlag(req.getIntValue("flag"));
        m.setQueueOffset(req.getLongValue("queueOffset"));
        m.setCommitLogOffset(req.getLongValue("commitLogOffset"));
        m.setSysFlag(req.getIntValue("sysFlag"));
        m.setBornTimestamp(req.getLongValue("bornTimestamp"));
        m.setBornHost(Util.parseHost(req.getString("bornHost")));
        m.setStoreTimestamp(req.getLongValue("storeTimestamp"));
        m.setStoreHost(Util.parseHost(req.getString("storeHost")));
        m.setReconsumeTimes(req.getIntValue("reconsumeTimes"));
        m.setPreparedTransactionOffset(req.getLongValue("preparedTransactionOffset"));
        byte[] body = Util.unb64(req.getString("bodyBase64"));
        m.setBody(body == null ? new byte[0] : body);
        // MessageDecoder.encode writes whatever bodyCRC holds; the broker stores crc32(body).
        m.setBodyCRC(req.containsKey("bodyCRC") ? req.getIntValue("bodyCRC") : UtilAll.crc32(m.getBody()));
        if (req.containsKey("storeSize")) {
            m.setStoreSize(req.getIntValue("storeSize"));
        }
        Map<String, String> p = props(req, "properties");
        MessageAccessor.setProperties(m, p == null ? new HashMap<String, String>() : p);
        return m;
    }

    static List<Map<String, Object>> decodeStoreRecords(byte[] body, boolean decompress, boolean readBody) {
        List<Map<String, Object>> out = new ArrayList<>();
        ByteBuffer bb = ByteBuffer.wrap(body);
        while (bb.hasRemaining()) {
            MessageExt m = MessageDecoder.decode(bb, readBody, decompress, true);
            if (m == null) {
                break;
            }
            Map<String, Object> o = Util.message(m);
            o.put("commitLogOffset", m.getCommitLogOffset());
            o.put("bodyCRC", m.getBodyCRC());
            o.put("storeSize", m.getStoreSize());
            o.put("preparedTransactionOffset", m.getPreparedTransactionOffset());
            out.add(o);
        }
        return out;
    }

    static Compressor compressor(JSONObject req) {
        return CompressorFactory.getCompressor(CompressionType.of(req.getString("type")));
    }
}
