"""Apache Kafka's own KRaft controllers and brokers as a target (``--db kafka``)."""
