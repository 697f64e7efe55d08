package org.rocketmqpy.compat;

import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;

/**
 * {@code SendLatencyBench NAMESRV TOPIC THREADS SIZE WARMUP_S MEASURE_S}: the send loop of RocketMQ's
 * benchmark Producer (example/benchmark/Producer: THREADS threads, synchronous sends of SIZE bytes, no
 * compression), timing every send in microseconds, which the official one does not keep. After WARMUP_S
 * seconds it measures MEASURE_S seconds and prints one JSON line:
 * {@code {"threads":..,"size":..,"sends":..,"failed":..,"seconds":..,"tps":..,"avgMs":..,"p50Ms":..,
 * "p90Ms":..,"p99Ms":..,"p999Ms":..,"maxMs":..}}. Run it with its own main (java -cp peers... this class).
 */
public final class SendLatencyBench {
    private SendLatencyBench() {
    }

    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String topic = args[1];
        int threads = Integer.parseInt(args[2]);
        int size = Integer.parseInt(args[3]);
        long warmupNanos = Long.parseLong(args[4]) * 1_000_000_000L;
        long measureNanos = Long.parseLong(args[5]) * 1_000_000_000L;
        java.io.PrintStream out = System.out;
        System.setOut(System.err);

        DefaultMQProducer producer = new DefaultMQProducer("benchmark_latency_producer");
        producer.setInstanceName(Long.toString(System.currentTimeMillis()));
        producer.setNamesrvAddr(namesrv);
        producer.setCompressMsgBodyOverHowmuch(Integer.MAX_VALUE);
        producer.start();

        byte[] body = new byte[size];
        Arrays.fill(body, (byte) 'b');
        long start = System.nanoTime();
        long measureFrom = start + warmupNanos;
        long measureTo = measureFrom + measureNanos;
        long[][] samples = new long[threads][];
        int[] counts = new int[threads];
        AtomicLong failed = new AtomicLong();
        CountDownLatch done = new CountDownLatch(threads);
        for (int t = 0; t < threads; t++) {
            final int slot = t;
            Thread worker = new Thread(() -> {
                long[] mine = new long[1 << 16];
                int n = 0;
                try {
                    while (true) {
                        long begin = System.nanoTime();
                        if (begin >= measureTo) {
                            break;
                        }
                        try {
                            producer.send(new Message(topic, body));
                        } catch (Exception e) {
                            if (begin >= measureFrom) {
                                failed.incrementAndGet();
                            }
                            continue;
                        }
                        long end = System.nanoTime();
                        if (begin >= measureFrom && end <= measureTo) {
                            if (n == mine.length) {
                                mine = Arrays.copyOf(mine, n * 2);
                            }
                            mine[n++] = (end - begin) / 1000;
                        }
                    }
                } finally {
                    samples[slot] = mine;
                    counts[slot] = n;
                    done.countDown();
                }
            }, "latency-bench-" + t);
            worker.start();
        }
        done.await();
        producer.shutdown();

        int total = 0;
        for (int c : counts) {
            total += c;
        }
        long[] all = new long[total];
        int at = 0;
        long sum = 0;
        for (int t = 0; t < threads; t++) {
            System.arraycopy(samples[t], 0, all, at, counts[t]);
            at += counts[t];
        }
        Arrays.sort(all);
        for (long v : all) {
            sum += v;
        }
        double seconds = measureNanos / 1e9;
        StringBuilder json = new StringBuilder();
        json.append(String.format(Locale.ROOT,
            "{\"threads\":%d,\"size\":%d,\"sends\":%d,\"failed\":%d,\"seconds\":%.3f,\"tps\":%.1f,\"avgMs\":%.3f,",
            threads, size, total, failed.get(), seconds, total / seconds, total == 0 ? 0.0 : sum / 1000.0 / total));
        json.append(String.format(Locale.ROOT,
            "\"p50Ms\":%.3f,\"p90Ms\":%.3f,\"p99Ms\":%.3f,\"p999Ms\":%.3f,\"maxMs\":%.3f}",
            pct(all, 0.50), pct(all, 0.90), pct(all, 0.99), pct(all, 0.999), total == 0 ? 0.0 : all[total - 1] / 1000.0));
        out.println(json);
        out.flush();
        System.exit(0);
    }

    private static double pct(long[] sorted, double q) {
        if (sorted.length == 0) {
            return 0.0;
        }
        int index = (int) Math.ceil(q * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(index, sorted.length - 1))] / 1000.0;
    }
}
