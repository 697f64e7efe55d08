package org.rocketmqpy.compat;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.protocol.heartbeat.MessageModel;

/**
 * {@code consume --namesrv ADDR --topic T --group G --count N [--timeout-ms MS] [--sub EXPR]
 * [--sql EXPR] [--from first|last] [--model CLUSTERING|BROADCASTING] [--access-key AK --secret-key SK]
 * [--poll-ns-ms MS]}
 *
 * <p>DefaultMQPushConsumer until N messages arrived or the timeout passed ({@code --poll-ns-ms} sets its
 * pollNameServerInterval, 30 s by default, so that a failover test need not wait for it). One line per message,
 * then {@code {"done":true,"count":n,"timedOut":bool}}. A timeout is not an error (exit 0), so a
 * test can also check that fewer messages arrive.
 */
final class ConsumeCommand {
    private ConsumeCommand() {
    }

    static void run(Args a) throws Exception {
        final int count = a.getInt("count", 1);
        long timeoutMs = a.getLong("timeout-ms", 30000);
        String topic = a.require("topic");

        DefaultMQPushConsumer consumer = a.has("access-key")
            ? new DefaultMQPushConsumer(a.require("group"), new AclClientRPCHook(
                new SessionCredentials(a.require("access-key"), a.require("secret-key"))),
                new AllocateMessageQueueAveragely())
            : new DefaultMQPushConsumer(a.require("group"));
        consumer.setNamesrvAddr(a.require("namesrv"));
        consumer.setConsumeFromWhere("last".equals(a.get("from", "first"))
            ? ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET : ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setMessageModel(MessageModel.valueOf(a.get("model", "CLUSTERING")));
        if (a.has("poll-ns-ms")) {
            consumer.setPollNameServerInterval(a.getInt("poll-ns-ms", 30000));
        }
        consumer.setConsumeMessageBatchMaxSize(1);
        consumer.setConsumeThreadMin(1);
        consumer.setConsumeThreadMax(1);
        if (a.has("sql")) {
            consumer.subscribe(topic, MessageSelector.bySql(a.get("sql", null)));
        } else {
            consumer.subscribe(topic, a.get("sub", "*"));
        }

        final CountDownLatch latch = new CountDownLatch(count);
        final int[] seen = {0};
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            synchronized (seen) {
                for (MessageExt m : msgs) {
                    if (seen[0] < count) {
                        seen[0]++;
                        Peer.Out.emit(Util.message(m));
                        latch.countDown();
                    }
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        boolean complete = latch.await(timeoutMs, TimeUnit.MILLISECONDS);
        Map<String, Object> done = new LinkedHashMap<>();
        synchronized (seen) {
            done.put("done", true);
            done.put("count", seen[0]);
            done.put("timedOut", !complete);
            Peer.Out.emit(done);
        }
        consumer.shutdown();
    }
}
