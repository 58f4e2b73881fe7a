"""The codecs: how statestream's records look as bytes, written once and read everywhere else.

- `formats`: the machine record's fields and the line formats of the offline tools;
- `json_records`, `json_numbers`: the compiled reader of machine records in JSON;
- `json_lines`, `pair_json`: the compiled writer of the joined pairs' JSON lines;
- `bad_input`: the one shape of dead-letter and late records (and a decoder's rejects);
- `kafka_rows`: the Kafka rows of one stateful call, back in Kafka order, binary columns read.

They know numpy, numba and pyarrow, not Spark or Kafka: the pure engines, the Spark runtime,
the queries and the tools all build on them. Nothing is imported here, so that importing one
codec does not compile the others.
"""
