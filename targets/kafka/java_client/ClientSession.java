/*
 * One session of kraft-chaos's Java client program (TxnClient.java): a KafkaProducer and a
 * KafkaConsumer of the release under test, the thread their ops run on, and the ops.
 *
 * Producer: acks=all, enable.idempotence=true, linger.ms=0, the session's compression.type
 * (default none), request/delivery timeouts and max.block.ms = the op timeout, and with a
 * transactional.id its transaction.timeout.ms.
 * Consumer: isolation.level=read_committed, enable.auto.commit=false,
 * auto.offset.reset=earliest, the session's group.id. Values travel as strings.
 */

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

final class ClientSession {
    final String name;
    final ExecutorService thread;
    KafkaProducer<String, String> producer;
    KafkaConsumer<String, String> consumer;
    boolean transactional;

    ClientSession(String name) {
        this.name = name;
        this.thread = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "session-" + name);
            t.setDaemon(true);
            return t;
        });
    }

    /** A send that threw before the record reached the producer's buffer. */
    static final class SyncSendError extends RuntimeException {
        private static final long serialVersionUID = 1L;

        SyncSendError(Throwable cause) { super(cause); }
    }

    JsonObject run(String op, JsonObject req) throws Exception {
        JsonObject out = new JsonObject();
        switch (op) {
            case "open":
                open(req);
                return info();
            case "info":
                return info();
            case "assign": {
                List<TopicPartition> tps = partitions(req.getAsJsonArray("partitions"));
                consumer.unsubscribe();       // assign and subscribe are mutually exclusive
                consumer.assign(tps);
                if (req.has("from_beginning") && req.get("from_beginning").getAsBoolean()) {
                    consumer.seekToBeginning(tps);
                }
                return out;
            }
            case "subscribe": {
                List<String> topics = new ArrayList<>();
                for (JsonElement e : req.getAsJsonArray("topics")) {
                    topics.add(e.getAsString());
                }
                consumer.unsubscribe();       // drops the manual assignment and its fetched records
                consumer.subscribe(topics);
                return out;
            }
            case "send": {
                ProducerRecord<String, String> rec = new ProducerRecord<>(req.get("topic").getAsString(),
                        req.get("partition").getAsInt(), null, req.get("value").getAsString());
                Future<RecordMetadata> f;
                try {
                    f = producer.send(rec);
                } catch (RuntimeException e) {
                    throw new SyncSendError(e);
                }
                RecordMetadata m = f.get(req.get("timeout_ms").getAsLong(), TimeUnit.MILLISECONDS);
                out.addProperty("offset", m.hasOffset() ? m.offset() : -1);
                return out;
            }
            case "poll": {
                JsonArray records = new JsonArray();
                if (!consumer.assignment().isEmpty() || !consumer.subscription().isEmpty()) {
                    ConsumerRecords<String, String> rs = consumer.poll(Duration.ofMillis(req.get("wait_ms").getAsLong()));
                    for (TopicPartition tp : rs.partitions()) {
                        for (ConsumerRecord<String, String> r : rs.records(tp)) {
                            JsonArray row = new JsonArray();
                            row.add(r.topic());
                            row.add(r.partition());
                            row.add(r.offset());
                            row.add(r.value());
                            records.add(row);
                        }
                    }
                }
                out.add("records", records);
                return out;
            }
            case "seek": {
                // only the keys assigned now (a subscribed consumer may have lost some)
                java.util.Set<TopicPartition> assigned = consumer.assignment();
                JsonArray skipped = new JsonArray();
                for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets(req.getAsJsonArray("offsets")).entrySet()) {
                    if (assigned.contains(e.getKey())) {
                        consumer.seek(e.getKey(), e.getValue().offset());
                    } else {
                        JsonArray tp = new JsonArray();
                        tp.add(e.getKey().topic());
                        tp.add(e.getKey().partition());
                        skipped.add(tp);
                    }
                }
                out.add("skipped", skipped);
                return out;
            }
            case "begin":
                producer.beginTransaction();
                return out;
            case "send_offsets":
                producer.sendOffsetsToTransaction(offsets(req.getAsJsonArray("offsets")), consumer.groupMetadata());
                return out;
            case "commit":
                producer.commitTransaction();
                return info();
            case "abort":
                producer.abortTransaction();
                return out;
            case "commit_offsets":
                consumer.commitSync(offsets(req.getAsJsonArray("offsets")), Duration.ofMillis(req.get("timeout_ms").getAsLong()));
                return out;
            default:
                throw new TxnClient.ProtocolError("unknown op " + op);
        }
    }

    void open(JsonObject req) {
        String bootstrap = req.get("bootstrap").getAsString();
        String timeout = String.valueOf(req.get("timeout_ms").getAsLong());
        String clientId = req.has("client_id") ? req.get("client_id").getAsString() : "kraft-chaos-" + name;
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("client.id", clientId + "-producer");
        p.put("acks", "all");
        p.put("enable.idempotence", "true");
        p.put("linger.ms", "0");
        p.put("compression.type", req.has("compression") ? req.get("compression").getAsString() : "none");
        p.put("request.timeout.ms", timeout);
        p.put("max.block.ms", timeout);
        p.put("delivery.timeout.ms", timeout);
        p.put("reconnect.backoff.max.ms", "1000");
        p.put("metadata.max.age.ms", "3000");
        String txnId = req.has("transactional_id") && !req.get("transactional_id").isJsonNull()
                ? req.get("transactional_id").getAsString() : null;
        if (txnId != null) {
            p.put("transactional.id", txnId);
            p.put("transaction.timeout.ms", String.valueOf(req.get("transaction_timeout_ms").getAsLong()));
        }
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("client.id", clientId + "-consumer");
        c.put("group.id", req.get("group_id").getAsString());
        c.put("isolation.level", "read_committed");
        c.put("enable.auto.commit", "false");
        c.put("auto.offset.reset", "earliest");
        c.put("max.poll.records", String.valueOf(req.get("max_poll_records").getAsInt()));
        c.put("session.timeout.ms", String.valueOf(req.get("session_timeout_ms").getAsLong()));
        c.put("heartbeat.interval.ms", String.valueOf(Math.max(100, req.get("session_timeout_ms").getAsLong() / 5)));
        c.put("request.timeout.ms", timeout);
        c.put("default.api.timeout.ms", timeout);
        c.put("reconnect.backoff.max.ms", "1000");
        c.put("metadata.max.age.ms", "3000");
        producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
        consumer = new KafkaConsumer<>(c, new StringDeserializer(), new StringDeserializer());
        transactional = txnId != null;
        if (transactional) {
            producer.initTransactions();
        }
    }

    /** What the session can tell of its transaction protocol (KIP-890 part 2 from 4.0). */
    JsonObject info() {
        JsonObject out = new JsonObject();
        Object tm = transactionManager();
        Object v2 = tm == null ? null : call(tm, "isTransactionV2Enabled");
        if (v2 instanceof Boolean) {
            out.addProperty("transaction_v2", (Boolean) v2);
        } else {
            out.add("transaction_v2", null);
        }
        Object state = tm == null ? null : field(tm, "currentState");
        out.addProperty("txn_state", state == null ? null : state.toString());
        return out;
    }

    static List<TopicPartition> partitions(JsonArray a) {
        List<TopicPartition> out = new ArrayList<>();
        for (JsonElement e : a) {
            JsonArray tp = e.getAsJsonArray();
            out.add(new TopicPartition(tp.get(0).getAsString(), tp.get(1).getAsInt()));
        }
        return out;
    }

    static Map<TopicPartition, OffsetAndMetadata> offsets(JsonArray a) {
        Map<TopicPartition, OffsetAndMetadata> out = new LinkedHashMap<>();
        for (JsonElement e : a) {
            JsonArray tpo = e.getAsJsonArray();
            out.put(new TopicPartition(tpo.get(0).getAsString(), tpo.get(1).getAsInt()),
                    new OffsetAndMetadata(tpo.get(2).getAsLong()));
        }
        return out;
    }

    /**
     * A crash: wake a consumer blocked in poll or commitSync, close the producer without
     * waiting for what it has not sent (a blocked transactional call then fails), then close
     * the consumer on the session's thread once the op in flight returned (the consumer is
     * not thread-safe), waiting at most timeout_ms for that.
     */
    JsonObject crash(JsonObject req) {
        long waitMs = req.has("timeout_ms") ? req.get("timeout_ms").getAsLong() : 5000;
        TxnClient.SESSIONS.remove(name, this);
        JsonObject out = new JsonObject();
        try {
            if (consumer != null) {
                consumer.wakeup();
            }
            if (producer != null) {
                producer.close(Duration.ZERO);
            }
        } catch (Throwable e) {
            out.addProperty("warning", e.toString());
        }
        Future<?> f = thread.submit(() -> closeQuietly(0));
        try {
            f.get(waitMs, TimeUnit.MILLISECONDS);
            out.addProperty("closed", true);
        } catch (Exception e) {
            out.addProperty("closed", false);
            out.addProperty("warning", "the session's op in flight did not return within " + waitMs + " ms");
        }
        return out;
    }

    @SuppressWarnings("deprecation")    // close(Duration): 4.x adds close(CloseOptions), 3.x has only this
    void closeQuietly(long timeoutMs) {
        Duration d = Duration.ofMillis(timeoutMs);
        try {
            if (producer != null) {
                producer.close(d);
            }
        } catch (Throwable e) {
            System.err.println("session " + name + ": producer close: " + e);
        }
        try {
            if (consumer != null) {
                consumer.close(d);
            }
        } catch (Throwable e) {
            System.err.println("session " + name + ": consumer close: " + e);
        }
        producer = null;
        consumer = null;
        TxnClient.SESSIONS.remove(name, this);
        thread.shutdown();
    }

    // -- reflection into the producer's transaction manager (not a public API) -------------

    /** The producer's transaction manager, or null (none, or a release without one). */
    Object transactionManager() {
        return producer == null ? null : field(producer, "transactionManager");
    }

    static Object field(Object o, String name) {
        for (Class<?> k = o.getClass(); k != null; k = k.getSuperclass()) {
            try {
                Field f = k.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(o);
            } catch (NoSuchFieldException e) {
                // look in the superclass
            } catch (Exception e) {
                return null;
            }
        }
        return null;
    }

    static Object call(Object o, String name) {
        try {
            Method m = o.getClass().getDeclaredMethod(name);
            m.setAccessible(true);
            return m.invoke(o);
        } catch (Exception e) {
            return null;
        }
    }
}
