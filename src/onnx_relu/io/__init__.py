"""Paths, streams and atomic writes: what the file layer and the ONNX layer share.

- :mod:`.endpoint`: what a path is (regular file, missing, ``-``, FIFO, device, folder),
  classified once as an :class:`~.endpoint.Endpoint`, and the rules every command applies to
  it (readable, writable, replaceable, a model file, a folder of outputs).
- :mod:`.streams`: opening an endpoint for reading or writing as its kind allows; writing every
  byte (:func:`~.streams.write_all`), filling a buffer (:func:`~.streams.read_exact`), bytes
  put back in front of a stream (:class:`~.streams.Prefixed`).
- :mod:`.atomic`: :func:`~.atomic.atomic_file`, how every output file is written.
- :mod:`.identity`: opening exactly what was classified (:func:`~.identity.open_classified`)
  and refusing an OUT that would change IN, by device and inode
  (:func:`~.identity.refuse_overlap`).

Importing any of these imports neither numpy nor the kernel nor an optional package. Every
user imports their names from the module that defines them.
"""
