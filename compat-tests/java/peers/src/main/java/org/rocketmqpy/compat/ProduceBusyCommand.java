package org.rocketmqpy.compat;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.remoting.exception.RemotingException;

/**
 * {@code produce-busy --namesrv ADDR --topic T --count N [--keys PREFIX] [--body-size BYTES] [--group G]
 * [--timeout-ms MS] [--retries R] [--latency-fault [--fault-on-failure-only]] [--max-attempts A]
 * [--poll-ns-ms MS]}
 *
 * <p>Synchronous sends as an application that must not lose a message writes them: a send that threw
 * (MQBrokerException, MQClientException, or RemotingException: DefaultMQProducer throws
 * RemotingTooMuchRequestException when --timeout-ms ran out before an attempt, e.g. while it looked up
 * the route on a loaded machine) is sent again (the same message, the same key "PREFIX{i}") until it
 * returns SEND_OK, at most --max-attempts times. A broker's SYSTEM_BUSY reaches the application as
 * MQBrokerException(2), since 2 is not among DefaultMQProducer's retryResponseCodes. --retries is the
 * producer's own retryTimesWhenSendFailed (default 0: every failed attempt is seen, and counted, here).
 * {@code --poll-ns-ms} sets its pollNameServerInterval (30 s by default), so that a failover test need
 * not wait that long for the producer to learn the new master.
 *
 * <p>{@code --fault-on-failure-only} keeps DefaultMQProducer's latency table but makes every step of it but the
 * last (sends of 15 s or more, and every failed send) take a broker out of rotation for no time at all: a broker is
 * then avoided only after it failed a send (for 600 s), not after a slow successful one. With Java's default table
 * a single successful send of 550 ms or more takes a broker out for 30 s, which a loaded machine can cause on any
 * broker; see {@code MQFaultStrategy.updateFaultItem} and {@code LatencyFaultToleranceImpl.pickOneAtLeast}.
 *
 * <p>Lines: one per acknowledged key {@code {"key","brokerName","queueId","queueOffset","msgId","attempts"}},
 * one per attempt that threw {@code {"key","failed":"<class>","code","brokerAddr","remark"}} (code and
 * brokerAddr: of an MQBrokerException, or of the MQClientException's cause; null for a RemotingException),
 * one per attempt answered with a status other than SEND_OK ({@code "failed":"status:<status>"}, the other
 * fields null), and at the end {@code {"done":true,"acked":N,"failures":{"<class>:<code>":count}}}.
 */
final class ProduceBusyCommand {
    private ProduceBusyCommand() {
    }

    static void run(Args a) throws Exception {
        String topic = a.require("topic");
        int count = a.getInt("count", 1);
        int maxAttempts = a.getInt("max-attempts", 100);
        String prefix = a.get("keys", "busy-");
        DefaultMQProducer producer = new DefaultMQProducer(a.get("group", "compat_busy_producer_group"));
        producer.setNamesrvAddr(a.require("namesrv"));
        producer.setSendMsgTimeout(a.getInt("timeout-ms", 10000));
        producer.setRetryTimesWhenSendFailed(a.getInt("retries", 0));
        producer.setSendLatencyFaultEnable(a.has("latency-fault"));
        if (a.has("fault-on-failure-only")) {
            producer.setNotAvailableDuration(new long[] {0L, 0L, 0L, 0L, 0L, 0L, 600000L});
        }
        if (a.has("poll-ns-ms")) {
            producer.setPollNameServerInterval(a.getInt("poll-ns-ms", 30000));
        }
        Map<String, Integer> failures = new TreeMap<>();
        int acked = 0;
        producer.start();
        try {
            for (int i = 0; i < count; i++) {
                String key = prefix + i;
                Message msg = new Message(topic, ProduceCommand.body(a, i));
                msg.setKeys(key);
                SendResult r = null;
                int attempts = 0;
                while (r == null) {
                    if (attempts == maxAttempts) {
                        throw new IllegalStateException(key + " was not acknowledged in " + maxAttempts + " attempts");
                    }
                    attempts++;
                    try {
                        r = producer.send(msg);
                        if (r.getSendStatus() != SendStatus.SEND_OK) {
                            failures.merge("status:" + r.getSendStatus(), 1, Integer::sum);
                            Map<String, Object> out = new LinkedHashMap<>();
                            out.put("key", key);
                            out.put("failed", "status:" + r.getSendStatus());
                            out.put("code", null);
                            out.put("brokerAddr", null);
                            out.put("remark", null);
                            Peer.Out.emit(out);
                            r = null;
                        }
                    } catch (MQBrokerException | MQClientException | RemotingException e) {
                        Map<String, Object> out = failure(key, e);
                        failures.merge(out.get("failed") + ":" + out.get("code"), 1, Integer::sum);
                        Peer.Out.emit(out);
                    }
                }
                acked++;
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("key", key);
                out.put("brokerName", r.getMessageQueue().getBrokerName());
                out.put("queueId", r.getMessageQueue().getQueueId());
                out.put("queueOffset", r.getQueueOffset());
                out.put("msgId", r.getMsgId());
                out.put("attempts", attempts);
                Peer.Out.emit(out);
            }
        } finally {
            producer.shutdown();
        }
        Map<String, Object> done = new LinkedHashMap<>();
        done.put("done", true);
        done.put("acked", acked);
        done.put("failures", failures);
        Peer.Out.emit(done);
    }

    /** What the application learns from a failed send: the exception, and the broker's code when it answered. */
    private static Map<String, Object> failure(String key, Exception e) {
        Throwable answered = e;
        if (e instanceof MQClientException && e.getCause() instanceof MQBrokerException) {
            answered = e.getCause();
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("key", key);
        out.put("failed", e.getClass().getSimpleName()
            + (e.getCause() != null ? "/" + e.getCause().getClass().getSimpleName() : ""));
        if (answered instanceof MQBrokerException) {
            MQBrokerException b = (MQBrokerException) answered;
            out.put("code", b.getResponseCode());
            out.put("brokerAddr", b.getBrokerAddr());
            out.put("remark", b.getErrorMessage());
        } else {
            out.put("code", e instanceof MQClientException ? ((MQClientException) e).getResponseCode() : null);
            out.put("brokerAddr", null);
            out.put("remark", e.getMessage());
        }
        return out;
    }
}
