package org.rocketmqpy.compat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.io.File;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.protocol.RequestCode;
import org.apache.rocketmq.common.protocol.header.SendMessageRequestHeader;
import org.apache.rocketmq.common.protocol.header.SendMessageRequestHeaderV2;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.SerializeType;

/**
 * {@code codec-bench [--iterations N] [--warmup W] [--dump-inputs DIR]}
 *
 * <p>Measures Java's own codec in-process after a JIT warm-up:
 * <ul>
 *   <li>send_v2_*: build a SEND_MESSAGE_V2 request (header + 1 KiB body), encode it to a frame
 *       as NettyEncoder does, then decode the frame (without its length prefix) with
 *       RemotingCommand.decode and decodeCommandCustomHeader(SendMessageRequestHeaderV2). One op
 *       is one encode plus one decode.</li>
 *   <li>pull32_decode: MessageDecoder.decodes of one pull body holding 32 store records
 *       (1 KiB bodies). One op decodes all 32.</li>
 * </ul>
 * The inputs are fixed (see {@link #INPUTS}); --dump-inputs writes them to DIR as
 * send_v2_json.frame, send_v2_rocketmq.frame, pull32.body and inputs.json.
 */
final class CodecBench {
    static final String TOPIC = "BenchmarkTopic";
    static final String GROUP = "BenchmarkProducerGroup";
    static final String BROKER = "broker-a";
    static final long BORN_TS = 1700000000000L;
    static final long STORE_TS = 1700000000123L;
    static final int OPAQUE = 1000;
    static final String UNIQ = "7F0000010F2A18B4AAC27E4B3C9D0000";
    static final int BODY_SIZE = 1024;
    static final int PULL_COUNT = 32;

    /** Describes the fixed inputs so another implementation can rebuild them. */
    static final Map<String, Object> INPUTS = new LinkedHashMap<>();

    static {
        INPUTS.put("code", RequestCode.SEND_MESSAGE_V2);
        INPUTS.put("opaque", OPAQUE);
        INPUTS.put("version", MQVersion.CURRENT_VERSION);
        INPUTS.put("producerGroup", GROUP);
        INPUTS.put("topic", TOPIC);
        INPUTS.put("defaultTopic", "TBW102");
        INPUTS.put("defaultTopicQueueNums", 4);
        INPUTS.put("queueId", 0);
        INPUTS.put("sysFlag", 0);
        INPUTS.put("bornTimestamp", BORN_TS);
        INPUTS.put("flag", 0);
        INPUTS.put("properties", sendProperties());
        INPUTS.put("propertiesString", MessageDecoder.messageProperties2String(sendProperties()));
        INPUTS.put("reconsumeTimes", 0);
        INPUTS.put("unitMode", false);
        INPUTS.put("batch", false);
        INPUTS.put("brokerName", BROKER);
        INPUTS.put("body", "byte i = (byte) ('a' + i % 26), " + BODY_SIZE + " bytes");
        INPUTS.put("pull", "32 records: topic " + TOPIC + ", queueId 0, queueOffset i, commitLogOffset = sum of "
            + "earlier record sizes, sysFlag 0, bornTimestamp " + BORN_TS + ", bornHost 127.0.0.1:50000, "
            + "storeTimestamp " + STORE_TS + ", storeHost 127.0.0.1:10911, body as above, bodyCRC = "
            + "UtilAll.crc32(body), properties = sendProperties with UNIQ_KEY ending in i as 4 hex digits, "
            + "plus MIN_OFFSET 0, MAX_OFFSET 32, CLUSTER DefaultCluster");
    }

    private CodecBench() {
    }

    static Map<String, String> sendProperties() {
        Map<String, String> p = new HashMap<>();
        p.put(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, UNIQ);
        p.put(MessageConst.PROPERTY_WAIT_STORE_MSG_OK, "true");
        p.put(MessageConst.PROPERTY_TAGS, "TagA");
        p.put(MessageConst.PROPERTY_KEYS, "OrderID-1000");
        return p;
    }

    static byte[] body() {
        byte[] b = new byte[BODY_SIZE];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) ('a' + i % 26);
        }
        return b;
    }

    /** Built as DefaultMQProducerImpl does: a V1 header, then the V2 short-name copy. */
    static RemotingCommand sendRequest(SerializeType type, byte[] body, int opaque) {
        SendMessageRequestHeader h = new SendMessageRequestHeader();
        h.setProducerGroup(GROUP);
        h.setTopic(TOPIC);
        h.setDefaultTopic("TBW102");
        h.setDefaultTopicQueueNums(4);
        h.setQueueId(0);
        h.setSysFlag(0);
        h.setBornTimestamp(BORN_TS);
        h.setFlag(0);
        h.setProperties(MessageDecoder.messageProperties2String(sendProperties()));
        h.setReconsumeTimes(0);
        h.setUnitMode(false);
        h.setBatch(false);
        h.setBname(BROKER);
        SendMessageRequestHeaderV2 v2 = SendMessageRequestHeaderV2.createSendMessageRequestHeaderV2(h);
        RemotingCommand cmd = RemotingCommand.createRequestCommand(RequestCode.SEND_MESSAGE_V2, v2);
        cmd.setVersion(MQVersion.CURRENT_VERSION);
        cmd.setOpaque(opaque);
        cmd.setSerializeTypeCurrentRPC(type);
        cmd.setBody(body);
        return cmd;
    }

    static byte[] encode(RemotingCommand cmd) {
        ByteBuf buf = Unpooled.buffer(256 + (cmd.getBody() == null ? 0 : cmd.getBody().length));
        cmd.fastEncodeHeader(buf);
        if (cmd.getBody() != null) {
            buf.writeBytes(cmd.getBody());
        }
        byte[] out = new byte[buf.readableBytes()];
        buf.readBytes(out);
        return out;
    }

    static SendMessageRequestHeaderV2 decode(byte[] frame) throws Exception {
        RemotingCommand cmd = RemotingCommand.decode(ByteBuffer.wrap(frame, 4, frame.length - 4).slice());
        return (SendMessageRequestHeaderV2) cmd.decodeCommandCustomHeader(SendMessageRequestHeaderV2.class);
    }

    static byte[] pullBody() throws Exception {
        byte[] body = body();
        ByteBuffer all = ByteBuffer.allocate(PULL_COUNT * 2048);
        long commitLogOffset = 0;
        for (int i = 0; i < PULL_COUNT; i++) {
            MessageExt m = new MessageExt();
            m.setTopic(TOPIC);
            m.setQueueId(0);
            m.setFlag(0);
            m.setQueueOffset(i);
            m.setCommitLogOffset(commitLogOffset);
            m.setSysFlag(0);
            m.setBornTimestamp(BORN_TS);
            m.setBornHost(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 50000));
            m.setStoreTimestamp(STORE_TS);
            m.setStoreHost(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 10911));
            m.setReconsumeTimes(0);
            m.setPreparedTransactionOffset(0);
            m.setBody(body);
            m.setBodyCRC(UtilAll.crc32(body));
            Map<String, String> p = sendProperties();
            p.put(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
                UNIQ.substring(0, UNIQ.length() - 4) + String.format("%04X", i));
            p.put(MessageConst.PROPERTY_MIN_OFFSET, "0");
            p.put(MessageConst.PROPERTY_MAX_OFFSET, String.valueOf(PULL_COUNT));
            p.put(MessageConst.PROPERTY_CLUSTER, "DefaultCluster");
            MessageAccessor.setProperties(m, p);
            byte[] rec = MessageDecoder.encode(m, false);
            all.put(rec);
            commitLogOffset += rec.length;
        }
        byte[] out = new byte[all.position()];
        all.flip();
        all.get(out);
        return out;
    }

    static void run(Args a) throws Exception {
        int iterations = a.getInt("iterations", 200000);
        int warmup = a.getInt("warmup", 50000);
        byte[] body = body();
        byte[] pull = pullBody();

        if (a.has("dump-inputs")) {
            File dir = new File(a.get("dump-inputs", "."));
            if (!dir.isDirectory() && !dir.mkdirs()) {
                throw new IllegalStateException("cannot create " + dir);
            }
            Files.write(new File(dir, "send_v2_json.frame").toPath(),
                encode(sendRequest(SerializeType.JSON, body, OPAQUE)));
            Files.write(new File(dir, "send_v2_rocketmq.frame").toPath(),
                encode(sendRequest(SerializeType.ROCKETMQ, body, OPAQUE)));
            Files.write(new File(dir, "pull32.body").toPath(), pull);
            Files.write(new File(dir, "inputs.json").toPath(),
                Util.toJson(INPUTS).getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }

        Map<String, Object> out = new LinkedHashMap<>();
        out.put("send_v2_json_ops_per_s", sendOps(SerializeType.JSON, body, warmup, iterations));
        out.put("send_v2_rocketmq_ops_per_s", sendOps(SerializeType.ROCKETMQ, body, warmup, iterations));
        out.put("pull32_decode_ops_per_s", pullOps(pull, Math.max(1, warmup / 8), Math.max(1, iterations / 8)));
        out.put("iterations", iterations);
        out.put("warmup", warmup);
        Peer.Out.emit(out);
    }

    private static long sink;

    static double sendOps(SerializeType type, byte[] body, int warmup, int n) throws Exception {
        for (int i = 0; i < warmup; i++) {
            sink += decode(encode(sendRequest(type, body, i))).getE();
        }
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            sink += decode(encode(sendRequest(type, body, i))).getE();
        }
        return rate(n, System.nanoTime() - t0);
    }

    static double pullOps(byte[] pull, int warmup, int n) {
        for (int i = 0; i < warmup; i++) {
            sink += MessageDecoder.decodes(ByteBuffer.wrap(pull)).size();
        }
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            List<MessageExt> l = MessageDecoder.decodes(ByteBuffer.wrap(pull));
            if (l.size() != PULL_COUNT) {
                throw new IllegalStateException("decoded " + l.size() + " records, expected " + PULL_COUNT);
            }
            sink += l.size();
        }
        return rate(n, System.nanoTime() - t0);
    }

    static double rate(int n, long nanos) {
        return Math.round(n * 1e9 / Math.max(1, nanos) * 10) / 10.0;
    }
}
