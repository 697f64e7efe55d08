package org.rocketmqpy.compat;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.serializer.SerializerFeature;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UnsupportedEncodingException;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.UnknownHostException;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

/** Conversions shared by the commands: JSON text, base64, host strings, message and command maps. */
final class Util {
    private Util() {
    }

    static PrintStream utf8(OutputStream out) {
        try {
            return new PrintStream(out, false, "UTF-8");
        } catch (UnsupportedEncodingException e) {
            throw new IllegalStateException(e);
        }
    }

    static String toJson(Object o) {
        return JSON.toJSONString(o, SerializerFeature.WriteMapNullValue,
            SerializerFeature.DisableCircularReferenceDetect);
    }

    static String b64(byte[] data) {
        return data == null ? null : Base64.getEncoder().encodeToString(data);
    }

    static byte[] unb64(String s) {
        return s == null ? null : Base64.getDecoder().decode(s);
    }

    /** "a.b.c.d:port" for IPv4, "[v6]:port" for IPv6. */
    static String host(SocketAddress sa) {
        if (!(sa instanceof InetSocketAddress)) {
            return sa == null ? null : sa.toString();
        }
        InetSocketAddress isa = (InetSocketAddress) sa;
        InetAddress a = isa.getAddress();
        String ip = a == null ? isa.getHostString() : a.getHostAddress();
        if (a instanceof Inet6Address) {
            ip = "[" + ip + "]";
        }
        return ip + ":" + isa.getPort();
    }

    /** Parses "ip:port" or "[v6]:port" without DNS look-ups for literal addresses. */
    static InetSocketAddress parseHost(String s) throws UnknownHostException {
        int colon = s.lastIndexOf(':');
        if (colon <= 0) {
            throw new IllegalArgumentException("expected ip:port, got: " + s);
        }
        String ip = s.substring(0, colon);
        if (ip.startsWith("[") && ip.endsWith("]")) {
            ip = ip.substring(1, ip.length() - 1);
        }
        int port = Integer.parseInt(s.substring(colon + 1));
        return new InetSocketAddress(InetAddress.getByName(ip), port);
    }

    static Map<String, Object> command(RemotingCommand cmd) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("code", cmd.getCode());
        m.put("opaque", cmd.getOpaque());
        m.put("flag", cmd.getFlag());
        m.put("language", cmd.getLanguage() == null ? null : cmd.getLanguage().name());
        m.put("version", cmd.getVersion());
        m.put("remark", cmd.getRemark());
        m.put("extFields", cmd.getExtFields());
        m.put("bodyBase64", b64(cmd.getBody()));
        m.put("serializeType", cmd.getSerializeTypeCurrentRPC() == null ? null
            : cmd.getSerializeTypeCurrentRPC().name());
        return m;
    }

    static Map<String, Object> message(MessageExt msg) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("topic", msg.getTopic());
        m.put("tags", msg.getTags());
        m.put("keys", msg.getKeys());
        m.put("bodyBase64", b64(msg.getBody()));
        m.put("properties", msg.getProperties());
        m.put("msgId", msg.getMsgId());
        m.put("offsetMsgId", msg instanceof MessageClientExt
            ? ((MessageClientExt) msg).getOffsetMsgId() : msg.getMsgId());
        m.put("queueId", msg.getQueueId());
        m.put("queueOffset", msg.getQueueOffset());
        m.put("reconsumeTimes", msg.getReconsumeTimes());
        m.put("bornTimestamp", msg.getBornTimestamp());
        m.put("storeTimestamp", msg.getStoreTimestamp());
        m.put("sysFlag", msg.getSysFlag());
        m.put("flag", msg.getFlag());
        m.put("bornHost", host(msg.getBornHost()));
        m.put("storeHost", host(msg.getStoreHost()));
        return m;
    }
}
