"""The private descriptor pool that holds accord's copy of ``lf.a2a.v1``.

The official ``a2a-sdk`` registers ``lf.a2a.v1`` in protobuf's default pool; registering ours
there too would fail with duplicate symbols in any process that imports both (interop tests,
applications that use both libraries). So scripts/gen_grpc.sh rewrites the generated module to
add its file to this pool instead. The pool starts with the well-known types the schema
imports. Their message classes in this pool are distinct from ``google.protobuf.struct_pb2``
and friends, so code that fills a field such as ``Task.metadata`` uses the field's own class
(``task.metadata.update(...)``), never a ``struct_pb2.Struct`` from the default pool.
"""

from __future__ import annotations

from google.protobuf import descriptor_pool, empty_pb2, struct_pb2, timestamp_pb2

POOL = descriptor_pool.DescriptorPool()
for _module in (empty_pb2, struct_pb2, timestamp_pb2):
    POOL.AddSerializedFile(_module.DESCRIPTOR.serialized_pb)
