"""Typed errors: one class per kind of failure the server reports, chosen by the HTTP status
(or, for uploads over gRPC, by the gRPC status code), carrying the server's own message."""


class Error(Exception):
    """Any failure of a fleetprof call. `message` is the server's message (or what went wrong
    on the way to it), `code` the server's code name (e.g. "NOT_FOUND", "" when there is none)
    and `status` the HTTP status (0 when no answer came)."""

    def __init__(self, message, code="", status=0):
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status

    def __str__(self):
        return "%s: %s" % (self.code, self.message) if self.code else self.message


class InvalidArgument(Error):
    """HTTP 400 (INVALID_ARGUMENT): a bad parameter; the message names it."""


class Unauthenticated(Error):
    """HTTP 401 (UNAUTHENTICATED): no token, or one the server does not know."""


class PermissionDenied(Error):
    """HTTP 403 (PERMISSION_DENIED): the token lacks the route's scope, or the request was refused."""


class NotFound(Error):
    """HTTP 404 (NOT_FOUND): no such profile, capture or job -- or no such route on this server."""


class Unavailable(Error):
    """HTTP 503 (UNAVAILABLE), or the server could not be reached at all (connection, TLS)."""


class CaptureFailed(Error):
    """A capture ended with a target FAILED (or nothing to capture). `capture` is its last state,
    `profile_ids` the profiles of the targets that did reach INDEXED, `failures` (target, reason)."""

    def __init__(self, message, capture, profile_ids, failures):
        super().__init__(message, code="CAPTURE_FAILED")
        self.capture = capture
        self.profile_ids = profile_ids
        self.failures = failures


_BY_HTTP_STATUS = {400: InvalidArgument, 401: Unauthenticated, 403: PermissionDenied,
                   404: NotFound, 503: Unavailable}
# gRPC status codes (grpc/status.h) for the upload, which speaks gRPC.
_BY_GRPC_CODE = {3: ("INVALID_ARGUMENT", InvalidArgument), 5: ("NOT_FOUND", NotFound),
                 7: ("PERMISSION_DENIED", PermissionDenied), 14: ("UNAVAILABLE", Unavailable),
                 16: ("UNAUTHENTICATED", Unauthenticated)}
_GRPC_NAMES = {0: "OK", 1: "CANCELLED", 2: "UNKNOWN", 4: "DEADLINE_EXCEEDED", 6: "ALREADY_EXISTS",
               8: "RESOURCE_EXHAUSTED", 9: "FAILED_PRECONDITION", 10: "ABORTED", 11: "OUT_OF_RANGE",
               12: "UNIMPLEMENTED", 13: "INTERNAL", 15: "DATA_LOSS"}


def from_http(status, code, message):
    """The error for an HTTP answer with `status` and the server's {"error":{code, message}}."""
    return _BY_HTTP_STATUS.get(status, Error)(message, code=code, status=status)


def from_grpc(grpc_code, message):
    name, cls = _BY_GRPC_CODE.get(grpc_code, (_GRPC_NAMES.get(grpc_code, str(grpc_code)), Error))
    return cls(message, code=name)
