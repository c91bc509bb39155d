"""Decode the records of Kafka's ``__cluster_metadata`` log (KIP-500, KIP-595, KIP-853), stdlib only.

A metadata record's value is a frame (Kafka's ``AbstractApiMessageSerde``)::

    frameVersion  unsigned varint   1
    apiKey        unsigned varint   the record type (``MetadataRecordType``)
    version       unsigned varint   the record's schema version
    body                            the message at that version

A control record (batch attribute isControl) has the key ``version i16, type
i16`` (``ControlRecordType``: 0 ABORT, 1 COMMIT, 2 LEADER_CHANGE, 3
SNAPSHOT_HEADER, 4 SNAPSHOT_FOOTER, 5 KRAFT_VERSION, 6 KRAFT_VOTERS) and a
value that is the message body alone, read at version 0 as Kafka's
``ControlRecordUtils`` does.

Bodies use Kafka's message-generator encoding; every schema here is flexible
from version 0: compact strings, bytes and arrays (unsigned varint length + 1,
0 meaning null), big-endian fixed-width integers, 16-byte UUIDs, and at the end
of every struct a tagged-field section (unsigned varint count, then per field
unsigned varint tag, unsigned varint size, data).

The field lists below follow the JSON schemas shipped in Kafka 4.3.1
(``common/metadata/*.json`` in kafka-metadata, ``common/message/
{LeaderChangeMessage,VotersRecord,KRaftVersionRecord,SnapshotHeaderRecord,
SnapshotFooterRecord}.json`` in kafka-clients). Decoded fields are named as
Kafka's JSON converters name them (``Name`` -> ``name``, ``KRaftVersion`` ->
``kRaftVersion``), so a payload reads like ``DumpLogSegments
--cluster-metadata-decoder``'s ``data``; UUIDs are rendered as Kafka prints
them (URL-safe base64 without padding), bytes as standard base64. A tagged
field appears only when the record holds it (the writer omits defaults).
"""
from __future__ import annotations

import base64
import dataclasses
import struct


class _Arr:
    """An array of structs with these fields."""
    def __init__(self, *fields):
        self.fields = fields


class _Struct:
    """A single struct with these fields."""
    def __init__(self, *fields):
        self.fields = fields


def F(name: str, type_, v: int = 0, tag: int | None = None, null: int | None = None):
    """A field: present from version ``v``; tagged with ``tag``; nullable from version ``null``."""
    return (name[0].lower() + name[1:], type_, v, tag, null)


_ENDPOINT = _Arr(F("Name", "string"), F("Host", "string"), F("Port", "uint16"),
                 F("SecurityProtocol", "int16"))
_FEATURE = _Arr(F("Name", "string"), F("MinSupportedVersion", "int16"), F("MaxSupportedVersion", "int16"))

#: apiKey -> (schema name, highest version known, fields), from Kafka 4.3.1's metadata schemas.
METADATA_SCHEMAS: dict[int, tuple[str, int, tuple]] = {
    0: ("RegisterBrokerRecord", 4, (
        F("BrokerId", "int32"), F("IsMigratingZkBroker", "bool", v=2), F("IncarnationId", "uuid"),
        F("BrokerEpoch", "int64"), F("EndPoints", _ENDPOINT), F("Features", _FEATURE),
        F("Rack", "string", null=0), F("Fenced", "bool"), F("InControlledShutdown", "bool", v=1),
        F("LogDirs", "[]uuid", v=3, tag=0), F("CordonedLogDirs", "[]uuid", v=4, tag=1, null=4))),
    1: ("UnregisterBrokerRecord", 0, (F("BrokerId", "int32"), F("BrokerEpoch", "int64"))),
    2: ("TopicRecord", 0, (F("Name", "string"), F("TopicId", "uuid"))),
    3: ("PartitionRecord", 2, (
        F("PartitionId", "int32"), F("TopicId", "uuid"), F("Replicas", "[]int32"), F("Isr", "[]int32"),
        F("RemovingReplicas", "[]int32"), F("AddingReplicas", "[]int32"), F("Leader", "int32"),
        F("LeaderRecoveryState", "int8", tag=0), F("LeaderEpoch", "int32"), F("PartitionEpoch", "int32"),
        F("Directories", "[]uuid", v=1), F("EligibleLeaderReplicas", "[]int32", v=2, tag=1, null=2),
        F("LastKnownElr", "[]int32", v=2, tag=2, null=2))),
    4: ("ConfigRecord", 0, (F("ResourceType", "int8"), F("ResourceName", "string"), F("Name", "string"),
                            F("Value", "string", null=0))),
    5: ("PartitionChangeRecord", 2, (
        F("PartitionId", "int32"), F("TopicId", "uuid"), F("Isr", "[]int32", tag=0, null=0),
        F("Leader", "int32", tag=1), F("Replicas", "[]int32", tag=2, null=0),
        F("RemovingReplicas", "[]int32", tag=3, null=0), F("AddingReplicas", "[]int32", tag=4, null=0),
        F("LeaderRecoveryState", "int8", tag=5), F("Directories", "[]uuid", v=1, tag=8, null=1),
        F("EligibleLeaderReplicas", "[]int32", v=2, tag=6, null=2),
        F("LastKnownElr", "[]int32", v=2, tag=7, null=2))),
    7: ("FenceBrokerRecord", 0, (F("Id", "int32"), F("Epoch", "int64"))),
    8: ("UnfenceBrokerRecord", 0, (F("Id", "int32"), F("Epoch", "int64"))),
    9: ("RemoveTopicRecord", 0, (F("TopicId", "uuid"),)),
    10: ("DelegationTokenRecord", 0, (
        F("Owner", "string"), F("Requester", "string"), F("Renewers", "[]string"),
        F("IssueTimestamp", "int64"), F("MaxTimestamp", "int64"), F("ExpirationTimestamp", "int64"),
        F("TokenId", "string"))),
    11: ("UserScramCredentialRecord", 0, (
        F("Name", "string"), F("Mechanism", "int8"), F("Salt", "bytes"), F("StoredKey", "bytes"),
        F("ServerKey", "bytes"), F("Iterations", "int32"))),
    12: ("FeatureLevelRecord", 0, (F("Name", "string"), F("FeatureLevel", "int16"))),
    14: ("ClientQuotaRecord", 0, (
        F("Entity", _Arr(F("EntityType", "string"), F("EntityName", "string", null=0))),
        F("Key", "string"), F("Value", "float64"), F("Remove", "bool"))),
    15: ("ProducerIdsRecord", 0, (F("BrokerId", "int32"), F("BrokerEpoch", "int64"),
                                  F("NextProducerId", "int64"))),
    17: ("BrokerRegistrationChangeRecord", 3, (
        F("BrokerId", "int32"), F("BrokerEpoch", "int64"), F("Fenced", "int8", tag=0),
        F("InControlledShutdown", "int8", v=1, tag=1), F("LogDirs", "[]uuid", v=2, tag=2),
        F("CordonedLogDirs", "[]uuid", v=3, tag=3, null=3))),
    18: ("AccessControlEntryRecord", 0, (
        F("Id", "uuid"), F("ResourceType", "int8"), F("ResourceName", "string"), F("PatternType", "int8"),
        F("Principal", "string"), F("Host", "string"), F("Operation", "int8"), F("PermissionType", "int8"))),
    19: ("RemoveAccessControlEntryRecord", 0, (F("Id", "uuid"),)),
    20: ("NoOpRecord", 0, ()),
    21: ("ZkMigrationStateRecord", 0, (F("ZkMigrationState", "int8"),)),
    22: ("RemoveUserScramCredentialRecord", 0, (F("Name", "string"), F("Mechanism", "int8"))),
    23: ("BeginTransactionRecord", 0, (F("Name", "string", tag=0, null=0),)),
    24: ("EndTransactionRecord", 0, ()),
    25: ("AbortTransactionRecord", 0, (F("Reason", "string", tag=0, null=0),)),
    26: ("RemoveDelegationTokenRecord", 0, (F("TokenId", "string"),)),
    27: ("RegisterControllerRecord", 0, (
        F("ControllerId", "int32"), F("IncarnationId", "uuid"), F("ZkMigrationReady", "bool"),
        F("EndPoints", _ENDPOINT), F("Features", _FEATURE))),
    28: ("ClearElrRecord", 0, (F("TopicName", "string"),)),
}

_VOTER_V0 = _Arr(F("VoterId", "int32"), F("VoterDirectoryId", "uuid", v=1))
#: Control record type -> (name as DumpLogSegments prints it, fields at version 0), from
#: ControlRecordType and the message schemas; 0/1 (transaction markers) are not decoded.
CONTROL_SCHEMAS: dict[int, tuple[str, tuple | None]] = {
    0: ("Abort", None),
    1: ("Commit", None),
    2: ("LeaderChange", (F("Version", "int16"), F("LeaderId", "int32"), F("Voters", _VOTER_V0),
                         F("GrantingVoters", _VOTER_V0))),
    3: ("SnapshotHeader", (F("Version", "int16"), F("LastContainedLogTimestamp", "int64"))),
    4: ("SnapshotFooter", (F("Version", "int16"),)),
    5: ("KRaftVersion", (F("Version", "int16"), F("KRaftVersion", "int16"))),
    6: ("KRaftVoters", (F("Version", "int16"), F("Voters", _Arr(
        F("VoterId", "int32"), F("VoterDirectoryId", "uuid"),
        F("Endpoints", _Arr(F("Name", "string"), F("Host", "string"), F("Port", "uint16"))),
        F("KRaftVersionFeature", _Struct(F("MinSupportedVersion", "int16"),
                                         F("MaxSupportedVersion", "int16"))))))),
}

_FIXED = {"int8": struct.Struct(">b"), "int16": struct.Struct(">h"), "int32": struct.Struct(">i"),
          "int64": struct.Struct(">q"), "uint16": struct.Struct(">H"), "float64": struct.Struct(">d")}


class MessageDecodeError(ValueError):
    """A message body that does not match its schema (truncated, bad length, null where not nullable)."""


class _Reader:
    """Reads message-generator values from ``buf``; raises MessageDecodeError past its end."""

    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes):
        self.buf, self.pos = buf, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise MessageDecodeError(f"{n} bytes wanted at byte {self.pos} of {len(self.buf)}")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            b = self.take(1)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise MessageDecodeError("unsigned varint longer than 5 bytes")

    def value(self, type_, nullable: bool):
        if isinstance(type_, _Struct):
            return self.struct(type_.fields, 0)
        if type_ in _FIXED:
            s = _FIXED[type_]
            return s.unpack(self.take(s.size))[0]
        if type_ == "bool":
            return self.take(1)[0] != 0
        if type_ == "uuid":
            return base64.urlsafe_b64encode(self.take(16)).rstrip(b"=").decode()
        n = self.uvarint() - 1                       # compact string, bytes or array
        if n < 0:
            if not nullable:
                raise MessageDecodeError(f"null {type_ if isinstance(type_, str) else 'array'} "
                                         f"in a non-nullable field at byte {self.pos}")
            return None
        if type_ == "string":
            return self.take(n).decode("utf-8")
        if type_ == "bytes":
            return base64.b64encode(self.take(n)).decode()
        if isinstance(type_, _Arr):
            return [self.struct(type_.fields, 0) for _ in range(n)]
        elem = type_[2:]                             # "[]int32" etc.
        return [self.value(elem, False) for _ in range(n)]

    def struct(self, fields: tuple, version: int) -> dict:
        out: dict = {}
        tagged = {}
        for name, type_, v, tag, null in fields:
            if version < v:
                continue
            if tag is not None:
                tagged[tag] = (name, type_, null)
                continue
            out[name] = self.value(type_, null is not None and version >= null)
        unknown = []
        for _ in range(self.uvarint()):
            tag, size = self.uvarint(), self.uvarint()
            data = self.take(size)
            if tag not in tagged:
                unknown.append({"tag": tag, "bytes": size})
                continue
            name, type_, null = tagged[tag]
            sub = _Reader(data)
            out[name] = sub.value(type_, null is not None and version >= null)
            if sub.pos != size:
                raise MessageDecodeError(f"tagged field {name} holds {size - sub.pos} extra bytes")
        if unknown:
            out["_unknownTaggedFields"] = unknown
        return out


@dataclasses.dataclass(frozen=True, slots=True)
class DecodedRecord:
    """One decoded metadata or control record.

    ``type``: the schema name ("TopicRecord", ...) for a metadata record, the
    control type name ("LeaderChange", "KRaftVoters", ...) for a control
    record; an unknown one is "UnknownMetadataRecord(apiKey=K)" or
    "UnknownControlRecord(type=T)". ``payload``: the decoded fields (see the
    module doc); when not decoded, ``{"apiKey"|"controlType": id, "version":
    v, "valueBytes": n}`` plus ``"error"`` when decoding failed.
    ``api_key``/``control_type``: the id (the other is None); ``version``:
    the record's version (None if unreadable); ``decoded``: whether
    ``payload`` holds the fields; ``value_bytes``: size of the value, bytes.
    """

    type: str
    payload: dict
    api_key: int | None
    control_type: int | None
    version: int | None
    decoded: bool
    value_bytes: int
    error: str | None = None


def _undecoded(type_: str, id_key: str, id_: int | None, version, size: int, error: str | None):
    payload = {id_key: id_, "version": version, "valueBytes": size}
    if error:
        payload["error"] = error
    return DecodedRecord(type_, payload, id_ if id_key == "apiKey" else None,
                         id_ if id_key == "controlType" else None, version, False, size, error)


def decode_metadata_value(value: bytes | None) -> DecodedRecord:
    """Decode a metadata record value: frame (frameVersion 1, apiKey, version) then body.

    Never raises: a record with an unknown apiKey, a version above the highest
    known here, an unknown frame version or a body that does not parse comes
    back with ``decoded`` False, its type id and size (and ``error`` text).
    """
    size = len(value) if value is not None else 0
    if not value:
        return _undecoded("UnknownMetadataRecord", "apiKey", None, None, size, "empty value")
    r = _Reader(value)
    try:
        frame, api_key, version = r.uvarint(), r.uvarint(), r.uvarint()
    except MessageDecodeError as e:
        return _undecoded("UnknownMetadataRecord", "apiKey", None, None, size, f"frame: {e}")
    schema = METADATA_SCHEMAS.get(api_key)
    name = schema[0] if schema else f"UnknownMetadataRecord(apiKey={api_key})"
    if frame != 1:
        return _undecoded(name, "apiKey", api_key, version, size, f"frame version {frame}, only 1 is known")
    if schema is None:
        return _undecoded(name, "apiKey", api_key, version, size, None)
    if version > schema[1]:
        return _undecoded(name, "apiKey", api_key, version, size,
                          f"version {version} is above {schema[1]}, the highest known")
    try:
        payload = r.struct(schema[2], version)
        if r.pos != len(value):
            raise MessageDecodeError(f"{len(value) - r.pos} bytes after the body")
    except (MessageDecodeError, UnicodeDecodeError) as e:
        return _undecoded(name, "apiKey", api_key, version, size, str(e))
    return DecodedRecord(name, payload, api_key, None, version, True, size)


def decode_control_record(key: bytes | None, value: bytes | None) -> DecodedRecord:
    """Decode a control record from its key (version i16, type i16) and value (body at version 0).

    Never raises: an unknown control type, a transaction marker (types 0, 1),
    a short key or a body that does not parse comes back with ``decoded``
    False, the type id and value size (and ``error`` text).
    """
    size = len(value) if value is not None else 0
    if key is None or len(key) < 4:
        return _undecoded("UnknownControlRecord", "controlType", None, None, size,
                          f"control key of {0 if key is None else len(key)} bytes, 4 expected")
    key_version, ctype = struct.unpack_from(">hh", key)
    name, fields = CONTROL_SCHEMAS.get(ctype, (f"UnknownControlRecord(type={ctype})", None))
    if fields is None or value is None:
        return _undecoded(name, "controlType", ctype, key_version, size, None)
    r = _Reader(value)
    try:
        payload = r.struct(fields, 0)
        if r.pos != len(value):
            raise MessageDecodeError(f"{len(value) - r.pos} bytes after the body")
    except (MessageDecodeError, UnicodeDecodeError) as e:
        return _undecoded(name, "controlType", ctype, key_version, size, str(e))
    return DecodedRecord(name, payload, None, ctype, payload.get("version", 0), True, size)


def decode_record(key: bytes | None, value: bytes | None, is_control: bool) -> DecodedRecord:
    """:func:`decode_control_record` for a record of a control batch, else :func:`decode_metadata_value`."""
    return decode_control_record(key, value) if is_control else decode_metadata_value(value)
