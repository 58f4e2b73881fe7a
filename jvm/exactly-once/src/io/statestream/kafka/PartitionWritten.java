package io.statestream.kafka;

import org.apache.spark.sql.connector.write.WriterCommitMessage;

/** What one task tells the driver: its partition, how many records, or that it skipped. */
record PartitionWritten(int partition, long records, boolean skipped)
    implements WriterCommitMessage {}
