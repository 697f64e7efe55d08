package org.rocketmqpy.compat;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;

/**
 * {@code producer-bench --namesrv ADDR --topic T --mode sync|async|batch [--count N] [--size BYTES]
 * [--inflight K] [--batch B] [--warmup W]}
 *
 * <p>Measures DefaultMQProducer throughput and per-call latency: sync sends from one thread, async
 * sends with K in flight, or batches of B messages from one thread. After W warm-up sends, one line:
 * {@code {"mode":..,"messages":..,"seconds":..,"msgsPerSec":..,"p50Ms":..,"p99Ms":..,"errors":..,
 * "errorsByKind":{..}}} (latency per send call; per batch in batch mode). An error's kind is the broker's
 * response code and remark for a broker's refusal, else the exception's class and message, with every number
 * written as N so that one cause counts once (a queue wait of 201 ms and one of 230 ms are one kind).
 */
final class ProduceBenchCommand {
    private ProduceBenchCommand() {
    }

    static void run(Args a) throws Exception {
        String topic = a.require("topic");
        String mode = a.require("mode");
        int count = a.getInt("count", 10000);
        int size = a.getInt("size", 1024);
        int inflight = a.getInt("inflight", 64);
        int batchSize = a.getInt("batch", 32);
        int warmup = a.getInt("warmup", 2000);
        ConcurrentMap<String, AtomicInteger> errorKinds = new ConcurrentHashMap<>();
        byte[] body = new byte[size];
        Arrays.fill(body, (byte) 'j');

        DefaultMQProducer producer = new DefaultMQProducer(a.get("group", "bench_java_" + mode));
        producer.setNamesrvAddr(a.require("namesrv"));
        producer.start();
        try {
            run(producer, topic, mode, warmup, body, inflight, batchSize, new ConcurrentHashMap<>());
            long cpuBefore = processCpuNanos();
            long[] lat = run(producer, topic, mode, count, body, inflight, batchSize, errorKinds);
            long cpu = processCpuNanos() - cpuBefore;
            long elapsed = lat[lat.length - 1];
            long errors = lat[lat.length - 2];
            long[] samples = Arrays.copyOf(lat, lat.length - 2);
            Arrays.sort(samples);
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("mode", mode);
            out.put("messages", count);
            out.put("seconds", elapsed / 1e9);
            out.put("msgsPerSec", count / (elapsed / 1e9));
            out.put("p50Ms", samples[samples.length / 2] / 1e6);
            out.put("p99Ms", samples[Math.min(samples.length - 1, (int) (samples.length * 0.99))] / 1e6);
            out.put("errors", errors);
            Map<String, Integer> byKind = new LinkedHashMap<>();
            errorKinds.forEach((kind, n) -> byKind.put(kind, n.get()));
            out.put("errorsByKind", byKind);
            // the client's own CPU (every JVM thread, JIT and GC included) per message of the timed run
            out.put("cpuUsPerMsg", cpu / 1e3 / count);
            Peer.Out.emit(out);
        } finally {
            producer.shutdown();
        }
    }

    private static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean)
            java.lang.management.ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    /** What went wrong, without the numbers that differ from one send to the next. */
    private static String errorKind(Throwable e) {
        if (e instanceof MQBrokerException) {
            MQBrokerException refused = (MQBrokerException) e;
            return "broker code " + refused.getResponseCode() + ": " + withoutNumbers(refused.getErrorMessage());
        }
        return e.getClass().getSimpleName() + ": " + withoutNumbers(e.getMessage());
    }

    private static String withoutNumbers(String text) {
        return text == null ? "" : text.replaceAll("\\d+", "N");
    }

    /** Latencies in ns, then the error count, then the elapsed ns; each async failure counted in errorKinds. */
    private static long[] run(DefaultMQProducer producer, String topic, String mode, int count, byte[] body,
        int inflight, int batchSize, ConcurrentMap<String, AtomicInteger> errorKinds) throws Exception {
        long start = System.nanoTime();
        long errors = 0;
        long[] lat;
        if ("sync".equals(mode)) {
            lat = new long[count + 2];
            for (int i = 0; i < count; i++) {
                long t0 = System.nanoTime();
                producer.send(new Message(topic, "B", body));
                lat[i] = System.nanoTime() - t0;
            }
        } else if ("async".equals(mode)) {
            lat = new long[count + 2];
            final long[] latencies = lat;
            final Semaphore permits = new Semaphore(inflight);
            final CountDownLatch done = new CountDownLatch(count);
            final AtomicInteger failed = new AtomicInteger();
            for (int i = 0; i < count; i++) {
                permits.acquire();
                final int index = i;
                final long t0 = System.nanoTime();
                producer.send(new Message(topic, "B", body), new SendCallback() {
                    @Override
                    public void onSuccess(SendResult sendResult) {
                        latencies[index] = System.nanoTime() - t0;
                        permits.release();
                        done.countDown();
                    }

                    @Override
                    public void onException(Throwable e) {
                        latencies[index] = System.nanoTime() - t0;
                        failed.incrementAndGet();
                        errorKinds.computeIfAbsent(errorKind(e), k -> new AtomicInteger()).incrementAndGet();
                        permits.release();
                        done.countDown();
                    }
                });
            }
            done.await();
            errors = failed.get();
        } else if ("batch".equals(mode)) {
            int batches = (count + batchSize - 1) / batchSize;
            lat = new long[batches + 2];
            for (int b = 0; b < batches; b++) {
                List<Message> batch = new ArrayList<>(batchSize);
                for (int i = 0; i < batchSize; i++) {
                    batch.add(new Message(topic, "B", body));
                }
                long t0 = System.nanoTime();
                producer.send(batch);
                lat[b] = System.nanoTime() - t0;
            }
        } else {
            throw new IllegalArgumentException("--mode must be sync, async or batch");
        }
        lat[lat.length - 2] = errors;
        lat[lat.length - 1] = System.nanoTime() - start;
        return lat;
    }
}
