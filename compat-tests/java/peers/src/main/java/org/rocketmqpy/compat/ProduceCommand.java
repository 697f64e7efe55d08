package org.rocketmqpy.compat;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;

/**
 * {@code produce --namesrv ADDR --topic T --count N [--tags TAG] [--keys K] [--prop k=v]...
 * [--body TEXT|--body-size BYTES] [--group G] [--timeout-ms MS] [--access-key AK --secret-key SK]}
 *
 * <p>Synchronous sends with DefaultMQProducer. "{i}" in --body/--keys is replaced by the message
 * index. Without --body or --body-size the body is "message-{i}". With --access-key every request is
 * signed by AclClientRPCHook.
 */
final class ProduceCommand {
    private ProduceCommand() {
    }

    static void run(Args a) throws Exception {
        String topic = a.require("topic");
        int count = a.getInt("count", 1);
        String group = a.get("group", "compat_producer_group");
        DefaultMQProducer producer = a.has("access-key")
            ? new DefaultMQProducer(group, new AclClientRPCHook(
                new SessionCredentials(a.require("access-key"), a.require("secret-key"))))
            : new DefaultMQProducer(group);
        producer.setNamesrvAddr(a.require("namesrv"));
        producer.setSendMsgTimeout(a.getInt("timeout-ms", 10000));
        producer.setRetryTimesWhenSendFailed(a.getInt("retries", 2));
        Map<String, String> props = a.pairs("prop");
        producer.start();
        try {
            for (int i = 0; i < count; i++) {
                Message msg = new Message(topic, body(a, i));
                if (a.has("tags")) {
                    msg.setTags(a.get("tags", null));
                }
                if (a.has("keys")) {
                    msg.setKeys(a.get("keys", null).replace("{i}", String.valueOf(i)));
                }
                for (Map.Entry<String, String> e : props.entrySet()) {
                    msg.putUserProperty(e.getKey(), e.getValue());
                }
                SendResult r = producer.send(msg);
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("msgId", r.getMsgId());
                out.put("offsetMsgId", r.getOffsetMsgId());
                out.put("queueId", r.getMessageQueue().getQueueId());
                out.put("queueOffset", r.getQueueOffset());
                out.put("brokerName", r.getMessageQueue().getBrokerName());
                out.put("status", r.getSendStatus().name());
                Peer.Out.emit(out);
            }
        } finally {
            producer.shutdown();
        }
    }

    static byte[] body(Args a, int i) {
        if (a.has("body-size")) {
            byte[] b = new byte[a.getInt("body-size", 0)];
            for (int k = 0; k < b.length; k++) {
                b[k] = (byte) ('a' + (k + i) % 26);
            }
            return b;
        }
        String text = a.get("body", "message-{i}").replace("{i}", String.valueOf(i));
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
