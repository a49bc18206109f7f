"""The gRPC binding: accord's ``lf.a2a.v1`` stubs and conversion to and from the wire model."""
