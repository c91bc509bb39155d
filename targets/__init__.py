"""Systems under test (``--db``): our Python KRaft and Apache Kafka, each behind one DB interface."""
