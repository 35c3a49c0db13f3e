"""Kafka message definitions in Kafka's own JSON schema format.

These files are data: `make codegen` (protocol/codegen.py) generates the codecs in
protocol/generated/ from them.
One file per request, response, header, embedded protocol and coordinator record.
"""

from pathlib import Path

SCHEMA_DIR: Path = Path(__file__).parent
