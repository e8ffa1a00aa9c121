#!/usr/bin/python3
"""The Python baseline for XSpace files: parses the whole file with protobuf's C++-backed
Python classes, the way a notebook would. usage: xspace_baseline.py FILE

There are no generated xplane_pb2 modules here, so the message types are declared at run
time from a descriptor built in code. The map fields (event_metadata, stat_metadata) are
declared as repeated {key, value} entries, which is exactly their wire form.
"""

import sys

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

F = descriptor_pb2.FieldDescriptorProto
SCALARS = {"int64": F.TYPE_INT64, "uint64": F.TYPE_UINT64, "double": F.TYPE_DOUBLE,
           "string": F.TYPE_STRING, "bytes": F.TYPE_BYTES}
# message: [(field name, number, type, repeated)]; a type not in SCALARS is a message.
MESSAGES = {
    "XSpace": [("planes", 1, "XPlane", True), ("errors", 2, "string", True),
               ("warnings", 3, "string", True), ("hostnames", 4, "string", True)],
    "XPlane": [("id", 1, "int64", False), ("name", 2, "string", False),
               ("lines", 3, "XLine", True), ("event_metadata", 4, "EventMetadataEntry", True),
               ("stat_metadata", 5, "StatMetadataEntry", True), ("stats", 6, "XStat", True)],
    "XLine": [("id", 1, "int64", False), ("name", 2, "string", False),
              ("timestamp_ns", 3, "int64", False), ("events", 4, "XEvent", True),
              ("duration_ps", 9, "int64", False), ("display_id", 10, "int64", False),
              ("display_name", 11, "string", False)],
    "XEvent": [("metadata_id", 1, "int64", False), ("offset_ps", 2, "int64", False),
               ("duration_ps", 3, "int64", False), ("stats", 4, "XStat", True),
               ("num_occurrences", 5, "int64", False)],
    "XStat": [("metadata_id", 1, "int64", False), ("double_value", 2, "double", False),
              ("uint64_value", 3, "uint64", False), ("int64_value", 4, "int64", False),
              ("str_value", 5, "string", False), ("bytes_value", 6, "bytes", False),
              ("ref_value", 7, "uint64", False)],
    "XEventMetadata": [("id", 1, "int64", False), ("name", 2, "string", False),
                       ("metadata", 3, "bytes", False), ("display_name", 4, "string", False),
                       ("stats", 5, "XStat", True), ("child_id", 6, "int64", True)],
    "XStatMetadata": [("id", 1, "int64", False), ("name", 2, "string", False),
                      ("description", 3, "string", False)],
    "EventMetadataEntry": [("key", 1, "int64", False), ("value", 2, "XEventMetadata", False)],
    "StatMetadataEntry": [("key", 1, "int64", False), ("value", 2, "XStatMetadata", False)],
}


def xspace_class():
    file_proto = descriptor_pb2.FileDescriptorProto(name="xspace_baseline.proto",
                                                    package="baseline", syntax="proto3")
    for message_name, fields in MESSAGES.items():
        message = file_proto.message_type.add(name=message_name)
        for name, number, type_name, repeated in fields:
            field = message.field.add(name=name, number=number,
                                      label=F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL)
            if type_name in SCALARS:
                field.type = SCALARS[type_name]
            else:
                field.type = F.TYPE_MESSAGE
                field.type_name = ".baseline." + type_name
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file_proto)
    return message_factory.MessageFactory(pool).GetPrototype(
        pool.FindMessageTypeByName("baseline.XSpace"))


def main():
    space = xspace_class()()
    with open(sys.argv[1], "rb") as f:
        space.ParseFromString(f.read())
    print(f"{len(space.planes)} planes", file=sys.stderr)


if __name__ == "__main__":
    main()
