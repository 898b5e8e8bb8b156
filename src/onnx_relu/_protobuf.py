"""What protobuf allows, shared by the file layer (``.pb`` tensors) and the ONNX layer (models).

Kept in the core, which imports nothing of protobuf, so that neither layer imports the other.
"""

from __future__ import annotations

#: Protobuf parses and serializes no message of this size or more (2 GiB).
PROTOBUF_MESSAGE_LIMIT = 1 << 31
