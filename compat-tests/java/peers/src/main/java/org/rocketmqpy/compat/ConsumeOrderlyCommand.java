package org.rocketmqpy.compat;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * {@code consume-orderly --namesrv ADDR --topic T --group G --count N [--timeout-ms MS] [--sub EXPR]}
 *
 * <p>DefaultMQPushConsumer with MessageListenerOrderly (queue locks, one message at a time) from the
 * first offset. One line per message in the order the listener saw them, then
 * {@code {"done":true,"count":n,"timedOut":bool}}.
 */
final class ConsumeOrderlyCommand {
    private ConsumeOrderlyCommand() {
    }

    static void run(Args a) throws Exception {
        final int count = a.getInt("count", 1);
        long timeoutMs = a.getLong("timeout-ms", 30000);
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(a.require("group"));
        consumer.setNamesrvAddr(a.require("namesrv"));
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setConsumeMessageBatchMaxSize(1);
        consumer.subscribe(a.require("topic"), a.get("sub", "*"));

        final CountDownLatch latch = new CountDownLatch(count);
        final int[] seen = {0};
        consumer.registerMessageListener((MessageListenerOrderly) (msgs, ctx) -> {
            synchronized (seen) {
                for (MessageExt m : msgs) {
                    if (seen[0] < count) {
                        seen[0]++;
                        Peer.Out.emit(Util.message(m));
                        latch.countDown();
                    }
                }
            }
            return ConsumeOrderlyStatus.SUCCESS;
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
