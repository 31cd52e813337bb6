"""http_check: is an HTTP endpoint up, how fast does it answer, when does its TLS certificate
expire. An agentprof Python check on the Datadog AgentCheck API (standard library only, so it
runs on plain python3 as well as on datadog_checks_base).

Instance options (conf.d/http_check.yaml.example):
  url (required), name (tag, default: the url), method (GET), timeout (seconds, 10; as the
  Datadog http_check reads it; request_timeout is taken too),
  http_response_status_code (regex, "(1|2|3)\\d\\d"), content_match (regex, optional),
  tls_verify (true), check_certificate_expiration (true), days_warning (14), days_critical (7),
  headers (mapping).

Metrics, tagged url:URL and instance:NAME (the Datadog http_check's names):
  network.http.response_time (s), network.http.can_connect / cant_connect (1/0),
  http.ssl.days_left, http.ssl.seconds_left (https only).
Service checks: http.can_connect, http.ssl_cert.
"""
import re
import socket
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request

from datadog_checks.base import AgentCheck

__version__ = "1.0.0"


def _decode(der):
    """The fields of a certificate that was not verified (tls_verify: false), where
    getpeercert() returns nothing: decoded the way the ssl module decodes verified ones."""
    import os
    import tempfile

    fd, path = tempfile.mkstemp(suffix=".pem")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(ssl.DER_cert_to_PEM_cert(der))
        return ssl._ssl._test_decode_cert(path)
    finally:
        os.unlink(path)


class HTTPCheck(AgentCheck):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # One opener per TLS setting, made at the first run that needs it: building an SSL
        # context loads the system's CA store (about 20 ms of CPU), which a run must not pay
        # every time, and an http:// URL never needs.
        self._openers = {}
        self._contexts = {}

    def _context(self, verify):
        context = self._contexts.get(bool(verify))
        if context is None:
            context = ssl.create_default_context()
            if not verify:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            self._contexts[bool(verify)] = context
        return context

    def _opener(self, https, verify):
        key = (https, bool(verify))
        opener = self._openers.get(key)
        if opener is None:
            handlers = [urllib.request.ProxyHandler({})]
            if https:
                handlers.append(urllib.request.HTTPSHandler(context=self._context(verify)))
            opener = self._openers[key] = urllib.request.build_opener(*handlers)
        return opener

    def check(self, instance):
        url = instance.get("url")
        if not url:
            raise ValueError("instance has no `url`")
        name = instance.get("name") or url
        tags = list(instance.get("tags") or []) + ["url:%s" % url, "instance:%s" % name]
        timeout = float(instance.get("timeout", instance.get("request_timeout", 10)))
        expected = re.compile(str(instance.get("http_response_status_code", r"(1|2|3)\d\d")))
        content_match = instance.get("content_match")
        verify = instance.get("tls_verify", True)

        request = urllib.request.Request(url, method=instance.get("method", "GET"),
                                         headers=dict(instance.get("headers") or {}))
        opener = self._opener(url.lower().startswith("https:"), verify)
        start = time.perf_counter()
        status, body, error = None, b"", None
        try:
            with opener.open(request, timeout=timeout) as resp:
                status = resp.status
                body = resp.read(1 << 20)
        except urllib.error.HTTPError as e:
            status = e.code
        except (urllib.error.URLError, socket.timeout, OSError) as e:
            error = str(getattr(e, "reason", e))
        elapsed = time.perf_counter() - start

        if status is None:
            self.gauge("network.http.can_connect", 0, tags=tags)
            self.gauge("network.http.cant_connect", 1, tags=tags)
            self.service_check("http.can_connect", AgentCheck.CRITICAL, tags=tags, message=error)
        else:
            self.gauge("network.http.response_time", elapsed, tags=tags)
            self.gauge("network.http.can_connect", 1, tags=tags)
            self.gauge("network.http.cant_connect", 0, tags=tags)
            problem = None
            if not expected.match(str(status)):
                problem = "status %d does not match %s" % (status, expected.pattern)
            elif content_match and not re.search(content_match, body.decode("utf-8", "replace")):
                problem = "content does not match %r" % content_match
            if problem:
                self.service_check("http.can_connect", AgentCheck.CRITICAL, tags=tags, message=problem)
            else:
                self.service_check("http.can_connect", AgentCheck.OK, tags=tags)

        parts = urllib.parse.urlsplit(url)
        if parts.scheme == "https" and instance.get("check_certificate_expiration", True):
            self._certificate(parts, self._context(verify), timeout, tags, instance)

    def _certificate(self, parts, context, timeout, tags, instance):
        host, port = parts.hostname, parts.port or 443
        try:
            with socket.create_connection((host, port), timeout=timeout) as sock:
                with context.wrap_socket(sock, server_hostname=host) as tls:
                    cert = tls.getpeercert() or _decode(tls.getpeercert(binary_form=True))
            expires = ssl.cert_time_to_seconds(cert["notAfter"])
        except Exception as e:  # any TLS failure is what this service check reports
            self.service_check("http.ssl_cert", AgentCheck.CRITICAL, tags=tags, message=str(e))
            return
        seconds_left = expires - time.time()
        days_left = seconds_left / 86400.0
        self.gauge("http.ssl.days_left", days_left, tags=tags)
        self.gauge("http.ssl.seconds_left", seconds_left, tags=tags)
        if days_left < float(instance.get("days_critical", 7)):
            status = AgentCheck.CRITICAL
        elif days_left < float(instance.get("days_warning", 14)):
            status = AgentCheck.WARNING
        else:
            status = AgentCheck.OK
        self.service_check("http.ssl_cert", status, tags=tags,
                           message="" if status == AgentCheck.OK else "expires in %.1f days" % days_left)
