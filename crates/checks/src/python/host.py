# agentprof Python host: runs Datadog-style checks for agentprof in a persistent worker.
#
# Embedded in the agentprof binary and started as `python -u -c <this> IN_FD OUT_FD`. It talks
# to agentprof over a private pipe pair (length-prefixed JSON, plus one-byte sync marks around
# each run so agentprof can snapshot this process at the run's exact start and end); the
# worker's stdout is not the channel, so a check that prints cannot corrupt anything.
#
# Before any check is imported it installs the host modules the Datadog Agent provides,
# `aggregator` and `datadog_agent`, so checks built on the real `datadog_checks_base` submit
# here. Where that package is missing, a small compatible AgentCheck is installed as
# `datadog_checks.base` and as the legacy `checks` module.
import hashlib
import importlib.util
import inspect
import itertools
import json
import math
import os
import re
import resource
import struct
import sys
import time
import traceback
import types

IN_FD = int(sys.argv[1])
OUT_FD = int(sys.argv[2])

# ---------------------------------------------------------------- channel

def _read_exact(n):
    chunks = []
    while n:
        b = os.read(IN_FD, n)
        if not b:
            raise EOFError("agentprof closed the channel")
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


def _write_all(data):
    view = memoryview(data)
    while view:
        n = os.write(OUT_FD, view)
        view = view[n:]


def recv():
    (n,) = struct.unpack(">I", _read_exact(4))
    return json.loads(_read_exact(n))


def send(obj):
    # A string that is not valid Unicode (a lone surrogate, from bytes decoded with
    # surrogateescape) becomes "?" rather than JSON agentprof cannot read: the rest of the
    # run stands.
    data = json.dumps(obj, default=str, ensure_ascii=False).encode("utf-8", "replace")
    _write_all(struct.pack(">I", len(data)) + data)


def mark(byte):
    """One write of one byte: agentprof accounts for exactly this syscall."""
    os.write(OUT_FD, byte)


def wait_mark(expected):
    """One read of one byte: agentprof accounts for exactly this syscall."""
    b = os.read(IN_FD, 1)
    if b != expected:
        raise EOFError("agentprof closed the channel")

# ---------------------------------------------------------------- state of the current run

RUN = {}


def _new_run():
    RUN.clear()
    RUN.update(metrics=[], service_checks=[], events=[], warnings=[], invalid=0, dropped=0,
               logs=[], logs_dropped=0)


_new_run()
CONFIG = {}
STATE_DIR = None


def _warn(msg):
    RUN["warnings"].append(msg)


def _clean_tags(tags, what):
    out = []
    if tags is None:
        return out
    if isinstance(tags, (str, bytes)):
        tags = [tags]
    try:
        items = list(tags)
    except TypeError:
        _warn("%s: tags %r are not a list, dropped" % (what, tags))
        RUN["invalid"] += 1
        return out
    for t in items:
        if isinstance(t, bytes):
            t = t.decode("utf-8", "replace")
        if not isinstance(t, str):
            _warn("%s: tag %r is not a string, dropped" % (what, t))
            RUN["invalid"] += 1
            continue
        try:
            t.encode("utf-8")
        except UnicodeEncodeError:
            _warn("%s: tag %r is not valid Unicode; its bad characters became ?" % (what, t))
            t = t.encode("utf-8", "replace").decode("utf-8")
        out.append(t)
    return out

# ---------------------------------------------------------------- host module: aggregator

# As agentprof's own limit: past it a run's submissions are counted, not kept.
MAX_SUBMISSIONS = 100000

aggregator = types.ModuleType("aggregator")
aggregator.GAUGE, aggregator.RATE, aggregator.COUNT, aggregator.MONOTONIC_COUNT = 0, 1, 2, 3
aggregator.COUNTER, aggregator.HISTOGRAM, aggregator.HISTORATE = 4, 5, 6


def submit_metric(check, check_id, mtype, name, value, tags, hostname, flush_first_value=False):
    if isinstance(name, bytes):
        name = name.decode("utf-8", "replace")
    if not isinstance(name, str) or not name:
        _warn("metric name %r is not a string, dropped" % (name,))
        RUN["invalid"] += 1
        return
    try:
        v = float(value)
    except (TypeError, ValueError):
        _warn("%s: value %r is not a number, dropped" % (name, value))
        RUN["invalid"] += 1
        return
    if not math.isfinite(v):
        _warn("%s: value %r is not a finite number, dropped" % (name, value))
        RUN["invalid"] += 1
        return
    if mtype not in (0, 1, 2, 3, 4, 5, 6):
        _warn("%s: unknown metric type %r, dropped" % (name, mtype))
        RUN["invalid"] += 1
        return
    if len(RUN["metrics"]) >= MAX_SUBMISSIONS:
        RUN["dropped"] += 1
        return
    sub = [int(mtype), name, v, _clean_tags(tags, name), hostname or None, bool(flush_first_value)]
    if mtype in (1, 6):
        # A rate or historate is divided by the time between submissions: keep when this one
        # was made (only for these, so the host's own bookkeeping stays small under --memory).
        sub.append(time.time())
    RUN["metrics"].append(sub)


def submit_service_check(check, check_id, name, status, tags, hostname, message=""):
    try:
        status = int(status)
    except (TypeError, ValueError):
        status = -1
    if status not in (0, 1, 2, 3):
        _warn("service check %s: status %r is not 0-3, dropped" % (name, status))
        RUN["invalid"] += 1
        return
    RUN["service_checks"].append([str(name), status, _clean_tags(tags, name), hostname or None, str(message or "")])


def submit_event(check, check_id, event):
    if not isinstance(event, dict):
        _warn("event %r is not a dict, dropped" % (event,))
        RUN["invalid"] += 1
        return
    e = dict(event)
    e["tags"] = _clean_tags(e.get("tags"), "event")
    RUN["events"].append(e)


def submit_histogram_bucket(check, check_id, name, value, lower_bound, upper_bound, monotonic, hostname, tags,
                            flush_first_value=False):
    # Buckets are reported as a count per bucket, tagged with its bounds.
    bt = _clean_tags(tags, name) + ["lower_bound:%s" % lower_bound, "upper_bound:%s" % upper_bound]
    mtype = 3 if monotonic else 2
    submit_metric(check, check_id, mtype, name, value, bt, hostname, flush_first_value)


def submit_histogram_bucket_multi(check, check_id, name, buckets, monotonic, hostname, tags, flush_first_value=False):
    for (value, lower, upper) in buckets:
        submit_histogram_bucket(check, check_id, name, value, lower, upper, monotonic, hostname, tags,
                                flush_first_value)


def submit_event_platform_event(check, check_id, raw_event, event_type):
    RUN.setdefault("event_platform_events", []).append([str(event_type), str(raw_event)[:4096]])


def submit_metric_e2e(*args, **kwargs):
    pass


for _f in (submit_metric, submit_service_check, submit_event, submit_histogram_bucket,
           submit_histogram_bucket_multi, submit_event_platform_event, submit_metric_e2e):
    setattr(aggregator, _f.__name__, _f)

# ---------------------------------------------------------------- host module: datadog_agent

datadog_agent = types.ModuleType("datadog_agent")
_PROCESS_START = time.time()
_METADATA = {}


def _cache_path(key):
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", key)[:120]
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return os.path.join(STATE_DIR, "%s-%s" % (safe, digest))


def read_persistent_cache(key):
    try:
        with open(_cache_path(key)) as f:
            return f.read()
    except OSError:
        return ""


def write_persistent_cache(key, value):
    os.makedirs(STATE_DIR, exist_ok=True)
    tmp = _cache_path(key) + ".tmp"
    with open(tmp, "w") as f:
        f.write(value)
    os.replace(tmp, _cache_path(key))


# The least level of the check's log records kept with its run (check --log-level).
LOG_LEVEL = [30]
# Log records kept per run at most; past it they are counted.
MAX_LOGS = 1000
_LEVEL_NAMES = {10: "DEBUG", 20: "INFO", 30: "WARNING", 40: "ERROR", 50: "CRITICAL"}


def _log(message, level=20):
    """datadog_agent.log: where a check's log records reach the Agent (datadog_checks_base's
    handler on the root logger calls it; the compatible AgentCheck's does too)."""
    level = int(level)
    if level < LOG_LEVEL[0]:
        return
    if len(RUN["logs"]) >= MAX_LOGS:
        RUN["logs_dropped"] += 1
        return
    name = _LEVEL_NAMES.get(level - level % 10, "LEVEL%d" % level)
    RUN["logs"].append([name, "%s" % (message,)])


_passthrough = lambda query, options=None: query  # noqa: E731  documented: no obfuscation

for _name, _fn in dict(
    get_config=lambda key: CONFIG.get(key),
    get_hostname=lambda: CONFIG.get("hostname", ""),
    get_host_tags=lambda: json.dumps({"system": CONFIG.get("tags", [])}),
    get_clustername=lambda: "",
    get_version=lambda: CONFIG.get("agent_version", "7.60.0"),
    log=_log,
    send_log=lambda log_line, check_id: None,
    set_check_metadata=lambda check_id, name, value: _METADATA.__setitem__((check_id, name), value),
    set_external_tags=lambda tags: None,
    read_persistent_cache=read_persistent_cache,
    write_persistent_cache=write_persistent_cache,
    tracemalloc_enabled=lambda *a, **k: False,
    get_process_start_time=lambda: _PROCESS_START,
    headers=lambda agentConfig=None, http_host=None, **kw: {"User-Agent": "agentprof"},
    obfuscate_sql=_passthrough,
    obfuscate_sql_exec_plan=lambda plan, normalize=False: plan,
    obfuscate_mongodb_string=lambda command: command,
    emit_agent_telemetry=lambda check_name, metric_name, metric_value, metric_type: None,
    report_issue=lambda check_name, report_json: None,
    resolve_issue=lambda issue_id: None,
).items():
    setattr(datadog_agent, _name, _fn)

sys.modules["aggregator"] = aggregator
sys.modules["datadog_agent"] = datadog_agent

# ---------------------------------------------------------------- compatible AgentCheck

COMPAT_SOURCE = r'''
import json, logging, traceback, copy
import aggregator, datadog_agent

class AgentCheck(object):
    OK, WARNING, CRITICAL, UNKNOWN = 0, 1, 2, 3
    HTTP_CONFIG_REMAPPER = None

    def __init__(self, *args, **kwargs):
        self.name = kwargs.get("name", args[0] if len(args) > 0 else "")
        self.init_config = kwargs.get("init_config", args[1] if len(args) > 1 else {}) or {}
        instances = kwargs.get("instances", args[2] if len(args) > 2 else [{}])
        if isinstance(instances, dict):
            instances = [instances]
        self.instances = instances or [{}]
        self.instance = self.instances[0] if self.instances else {}
        self.check_id = ""
        self.warnings = []
        self.log = logging.getLogger("checks.%s" % self.name)
        self.hostname = datadog_agent.get_hostname()

    @staticmethod
    def load_config(yaml_str):
        return json.loads(yaml_str)

    def _tags(self, tags):
        return list(tags or [])

    def gauge(self, name, value, tags=None, hostname=None, device_name=None, raw=False):
        aggregator.submit_metric(self, self.check_id, aggregator.GAUGE, name, value, self._dev(tags, device_name), hostname, False)

    def count(self, name, value, tags=None, hostname=None, device_name=None, raw=False):
        aggregator.submit_metric(self, self.check_id, aggregator.COUNT, name, value, self._dev(tags, device_name), hostname, False)

    def monotonic_count(self, name, value, tags=None, hostname=None, device_name=None, raw=False, flush_first_value=False):
        aggregator.submit_metric(self, self.check_id, aggregator.MONOTONIC_COUNT, name, value, self._dev(tags, device_name), hostname, flush_first_value)

    def rate(self, name, value, tags=None, hostname=None, device_name=None, raw=False):
        aggregator.submit_metric(self, self.check_id, aggregator.RATE, name, value, self._dev(tags, device_name), hostname, False)

    def histogram(self, name, value, tags=None, hostname=None, device_name=None, raw=False):
        aggregator.submit_metric(self, self.check_id, aggregator.HISTOGRAM, name, value, self._dev(tags, device_name), hostname, False)

    def historate(self, name, value, tags=None, hostname=None, device_name=None, raw=False):
        aggregator.submit_metric(self, self.check_id, aggregator.HISTORATE, name, value, self._dev(tags, device_name), hostname, False)

    def increment(self, name, value=1, tags=None, hostname=None, device_name=None, raw=False):
        aggregator.submit_metric(self, self.check_id, aggregator.COUNTER, name, value, self._dev(tags, device_name), hostname, False)

    def decrement(self, name, value=-1, tags=None, hostname=None, device_name=None, raw=False):
        aggregator.submit_metric(self, self.check_id, aggregator.COUNTER, name, value, self._dev(tags, device_name), hostname, False)

    def _dev(self, tags, device_name):
        tags = self._tags(tags)
        if device_name:
            tags.append("device:%s" % device_name)
        return tags

    def service_check(self, name, status, tags=None, hostname=None, message=None, raw=False):
        aggregator.submit_service_check(self, self.check_id, name, status, self._tags(tags), hostname, message or "")

    def event(self, event):
        aggregator.submit_event(self, self.check_id, event)

    def warning(self, warning_message, *args, **kwargs):
        message = str(warning_message) % args if args else str(warning_message)
        self.log.warning(message)
        self.warnings.append(message)

    def get_warnings(self):
        w, self.warnings = self.warnings, []
        return w

    def set_metadata(self, name, value, **options):
        datadog_agent.set_check_metadata(self.check_id, name, value)

    def read_persistent_cache(self, key):
        return datadog_agent.read_persistent_cache("%s_%s" % (self.check_id, key))

    def write_persistent_cache(self, key, value):
        datadog_agent.write_persistent_cache("%s_%s" % (self.check_id, key), value)

    def check(self, instance):
        raise NotImplementedError

    def run(self):
        try:
            self.check(copy.deepcopy(self.instance))
            return ""
        except Exception as e:
            return json.dumps([{"message": str(e), "traceback": traceback.format_exc()}])
'''


def _install_compat():
    compat = types.ModuleType("datadog_checks.base")
    compat.__file__ = "<agentprof compat AgentCheck>"
    exec(compile(COMPAT_SOURCE, "<agentprof AgentCheck>", "exec"), compat.__dict__)
    pkg = types.ModuleType("datadog_checks")
    pkg.__path__ = []
    pkg.base = compat
    checks_mod = types.ModuleType("checks")
    checks_mod.AgentCheck = compat.AgentCheck
    sys.modules.update({"datadog_checks": pkg, "datadog_checks.base": compat, "checks": checks_mod})
    # As datadog_checks_base does: every log record goes to datadog_agent.log.
    import logging

    class _AgentLogHandler(logging.Handler):
        def emit(self, record):
            try:
                text = self.format(record)
            except Exception:
                text = str(record.msg)
            datadog_agent.log(text, record.levelno)

    logging.getLogger().addHandler(_AgentLogHandler())
    return compat.AgentCheck, "agentprof compatible AgentCheck"


def _base_class():
    try:
        from datadog_checks.base import AgentCheck
        try:
            from datadog_checks.base import __version__ as v
        except ImportError:
            v = "?"
        return AgentCheck, "datadog_checks_base %s" % v
    except ImportError as e:
        # Installed but not importable (datadog-checks-base without its [deps] extra) is not
        # the same as absent: say so, once per worker, with the command that fixes it.
        if importlib.util.find_spec("datadog_checks") is not None:
            sys.stderr.write(
                "agentprof: datadog_checks.base is installed in %s but cannot be imported (%s); "
                "running on agentprof's compatible AgentCheck, which lacks ConfigurationError, "
                "is_affirmative and utils.http. Fix: %s -m pip install 'datadog-checks-base[deps]'\n"
                % (sys.executable, e, sys.executable))
        return _install_compat()

# ---------------------------------------------------------------- loading like the Agent

CHECKS = []
PROFILE = None


def _find_class(module, base):
    """The Agent's choice of check class: in dir(module) order, the first subclass of the base
    class that is not the base itself and has no subclasses of its own, wherever it was
    defined (a package that re-exports its class works)."""
    for attr in dir(module):
        try:
            klass = getattr(module, attr)
            if not isinstance(klass, type) or klass is base or not issubclass(klass, base):
                continue
            if klass.__subclasses__():
                continue
        except Exception:
            continue
        return klass
    return None


def _import_check(msg):
    """The module as the Agent's loader finds it: the installed integration package
    `datadog_checks.NAME` first, then the checks directory's NAME.py."""
    package = "datadog_checks." + msg["name"]
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    if spec is not None:
        module = importlib.import_module(package)
        return module, package, getattr(module, "__file__", None) or package
    path = msg.get("path")
    if not path:
        raise ImportError("no module named %r in %s" % (package, sys.executable))
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec = importlib.util.spec_from_file_location(msg["name"], path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[msg["name"]] = module
    spec.loader.exec_module(module)
    return module, msg["name"], path


def _load_config(cls, value):
    """What the Agent hands a check: its YAML text through the class's `load_config`."""
    loader = getattr(cls, "load_config", None)
    if callable(loader):
        return loader(json.dumps(value))
    return value


# The names this host's own code has in tracebacks and traces (it is read from stdin).
_HOST_FILES = ("<stdin>", "<string>")


def _where(exc):
    """`file:line: Type: message` of an exception, at the innermost frame of the check's code
    (this host runs as `<string>` and is never that frame)."""
    last = traceback.format_exception_only(type(exc), exc)[-1].strip()
    if isinstance(exc, SyntaxError) and exc.filename:
        return "%s:%s: %s: %s" % (exc.filename, exc.lineno, type(exc).__name__, exc.msg)
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename not in _HOST_FILES
              and "importlib._bootstrap" not in f.filename]
    if frames:
        return "%s:%d: %s" % (frames[-1].filename, frames[-1].lineno, last)
    return last


def load(msg):
    try:
        return _load(msg)
    except Exception as e:
        return {"error": traceback.format_exc(), "where": _where(e)}


def _load(msg):
    global STATE_DIR
    CONFIG.clear()
    CONFIG.update(msg.get("config") or {})
    STATE_DIR = msg["state_dir"]
    MEMORY_OPTS.update(msg.get("memory") or {})
    BREAKPOINT[0] = msg.get("breakpoint")
    base, base_name = _base_class()
    module, module_name, origin = _import_check(msg)
    cls = _find_class(module, base)
    if cls is None:
        raise TypeError("%s: no check class: no subclass of AgentCheck without subclasses of its own "
                        "in module %r" % (origin, module_name))
    if BREAKPOINT[0] is not None:
        # Checked before any run, as the Agent refuses a line outside the method at once.
        BREAKPOINT[0] = _breakpoint_line(cls, BREAKPOINT[0])
    version = getattr(module, "__version__", None)
    if version is None and module_name.startswith("datadog_checks."):
        try:
            version = importlib.import_module(module_name + ".__about__").__version__
        except Exception:
            version = None
    del CHECKS[:]
    failed = []
    for i, (inst, init, check_id) in enumerate(
            zip(msg["instances"], msg["init_configs"], msg["check_ids"])):
        # As the Agent does: an instance whose configuration or constructor fails is
        # reported with its index, and the others load and run.
        try:
            init_config = _load_config(cls, init or {}) or {}
            instance = _load_config(cls, inst)
            if not isinstance(instance, dict):
                raise TypeError("instance is not a mapping: %r" % (instance,))
            c = _construct(cls, msg["name"], init_config, instance)
            c.check_id = check_id
        except Exception as e:
            failed.append([i, _where(e)])
            c = None
        CHECKS.append(c)
    if CHECKS and all(c is None for c in CHECKS):
        where = "; ".join("instances[%d]: %s" % (i, w) for i, w in failed)
        return {"error": where, "where": where}
    return {"ok": True, "class": cls.__name__, "base": base_name,
            "version": version, "module": module_name, "origin": origin,
            "python": sys.version.split()[0], "failed": failed,
            "implementation": sys.implementation.name, "hexversion": sys.hexversion,
            "abiflags": getattr(sys, "abiflags", "")}


def _construct(cls, name, init_config, instance):
    """The check object, as the Agent makes it: `cls(name, init_config, instances)`, and for
    a check whose constructor still takes the legacy `agentConfig` argument, again with it
    (the Agent's settings), with the Agent's deprecation warning."""
    try:
        return cls(name=name, init_config=init_config, instances=[instance])
    except TypeError as e:
        if "agentConfig" not in str(e):
            raise
    sys.stderr.write(
        "agentprof: %s: the check's constructor takes the deprecated agentConfig argument; "
        "passing the agent settings as the Agent does\n" % name)
    return cls(name, init_config, dict(CONFIG), [instance])


def _rusage():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime


MEMORY = {"first": None, "last": None}
# `check --memory`'s options (as `agent check -m` takes them): frames per trace, lines shown,
# what they are grouped by, and glob patterns of the files whose allocations count.
MEMORY_OPTS = {"frames": 1, "limit": 10, "sort": "lineno", "filters": []}
# `check --breakpoint LINE`: the line of the check's file where pdb stops.
BREAKPOINT = [None]
_NOT_THE_CHECKS = None


def _snapshot():
    import tracemalloc
    snap = tracemalloc.take_snapshot()
    if MEMORY_OPTS["filters"]:
        # As datadog_checks_base's memory profiler: a pattern matches the allocating frame
        # (the most recent), not any frame of its traceback.
        snap = snap.filter_traces([tracemalloc.Filter(True, p)
                                   for p in MEMORY_OPTS["filters"]])
    return snap


def _grown(new, old):
    """Lines (or files, or tracebacks: --m-sort) whose live memory grew from `old` to `new`,
    biggest first. agentprof's own host code (read from stdin) and tracemalloc are not the
    check's: they are left out of the statistics, which group by the same frames (filtering
    every trace of the snapshots first costs about a second once the check's modules are
    traced). A traceback lists its frames oldest first: the allocating one is the last."""
    return [st for st in new.compare_to(old, MEMORY_OPTS["sort"])
            if st.size_diff > 0 and st.traceback[-1].filename not in _NOT_THE_CHECKS]


def _lines(stats, top=None):
    out = []
    for st in stats[:top or MEMORY_OPTS["limit"]]:
        frame = st.traceback[-1]
        line = 0 if MEMORY_OPTS["sort"] == "filename" else frame.lineno
        row = [frame.filename, line, st.size_diff, st.count_diff]
        if MEMORY_OPTS["sort"] == "traceback":
            # The check's frames only: this host's (under every run) are not its.
            row.append(["%s:%d" % (f.filename, f.lineno) for f in reversed(st.traceback)
                        if f.filename not in _HOST_FILES])
        out.append(row)
    return out


# Instruction counts (`agentprof gate --measure instructions`): the worker runs under
# valgrind's callgrind, collection off; each run is bracketed by client requests (collection
# on, then off, then a dump of the counts, which agentprof reads). Valgrind recognises its
# requests by a fixed instruction sequence, run here from a page of machine code (x86-64).
_COUNTER = None
_CALLGRIND = 0x43540000  # VG_USERREQ_TOOL_BASE('C', 'T')
_DUMP_STATS, _TOGGLE_COLLECT, _START_INSTRUMENTATION = 0, 2, 4
_RUNNING_ON_VALGRIND = 0x1001


def _counter():
    global _COUNTER
    if _COUNTER is None:
        import ctypes
        import mmap
        import platform
        if platform.machine() not in ("x86_64", "AMD64"):
            raise RuntimeError("instruction counts by valgrind are built for x86-64 only")
        code = bytes([
            0x48, 0x89, 0xF8,        # mov rax, rdi: the request's arguments
            0x31, 0xD2,              # xor edx, edx: the answer when not under valgrind
            0x48, 0xC1, 0xC7, 0x03,  # rol rdi, 3
            0x48, 0xC1, 0xC7, 0x0D,  # rol rdi, 13
            0x48, 0xC1, 0xC7, 0x3D,  # rol rdi, 61
            0x48, 0xC1, 0xC7, 0x33,  # rol rdi, 51
            0x48, 0x87, 0xDB,        # xchg rbx, rbx: the request
            0x48, 0x89, 0xD0,        # mov rax, rdx
            0xC3])                   # ret
        page = mmap.mmap(-1, mmap.PAGESIZE,
                         prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        page.write(code)
        fn = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint64))(
            ctypes.addressof(ctypes.c_char.from_buffer(page)))
        args = (ctypes.c_uint64 * 6)()

        def request(code):
            args[0] = code
            return fn(args)
        _COUNTER = (page, fn, args, request)
    return _COUNTER[3]


def count_start(msg):
    """Instrumentation on (collection stays off), then one empty bracket: its count is what
    a bracket itself costs, which agentprof takes off each run's."""
    request = _counter()
    if not request(_RUNNING_ON_VALGRIND):
        raise RuntimeError("the worker is not running under valgrind")
    request(_CALLGRIND + _START_INSTRUMENTATION)
    _bracket(request, lambda: None)
    return {"ok": True}


def _bracket(request, work):
    request(_CALLGRIND + _TOGGLE_COLLECT)
    try:
        return work()
    finally:
        request(_CALLGRIND + _TOGGLE_COLLECT)
        request(_CALLGRIND + _DUMP_STATS)


_PERF = {}


def _perf_counter(kind, config):
    """A perf_event_open counter of (type, config) in user space on this thread and the
    threads it starts, opened once; its file descriptor."""
    if (kind, config) not in _PERF:
        import ctypes
        import platform
        nr = {"x86_64": 298, "AMD64": 298, "aarch64": 241}.get(platform.machine())
        if nr is None:
            raise RuntimeError("no perf_event_open number for %s" % platform.machine())
        # perf_event_attr, first version (64 bytes): type, size, config, sample_period,
        # sample_type, read_format, flags (inherit, exclude_kernel, exclude_hv), wakeup_events,
        # bp_type, config1.
        flags = (1 << 1) | (1 << 5) | (1 << 6)
        attr = ctypes.create_string_buffer(
            struct.pack("=IIQQQQQIIQ", kind, 64, config, 0, 0, 0, flags, 0, 0, 0), 64)
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.syscall(ctypes.c_long(nr), attr, ctypes.c_int(0), ctypes.c_int(-1),
                          ctypes.c_int(-1), ctypes.c_ulong(0))
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, "perf_event_open: %s" % os.strerror(err))
        _PERF[(kind, config)] = fd
    return _PERF[(kind, config)]


def _perf_read(fd):
    return struct.unpack("=Q", os.read(fd, 8))[0]


# ---------------------------------------------------------------- in-worker sampler
#
# `--profile` samples a check's stacks. agentprof reads them from outside where it can read
# this interpreter (CPython 3.11+); elsewhere this thread does, while run() runs: every
# period it takes sys._current_frames() and charges each thread's stack the wall time since
# the last round and the CPU its thread used since (its own CPU clock), so a thread blocked
# in a read shows wall time and no CPU. The thread's own CPU is counted and reported.

class _Sampler(object):
    def __init__(self, hz):
        import threading
        self.period = 1.0 / max(1, hz)
        self.active = False
        self.stop = False
        self.stacks = {}
        self.dropped = 0
        self.cpu_ns = 0
        self.switch = sys.getswitchinterval()
        self.clocks = {}
        self.main = threading.main_thread().ident
        self.thread = threading.Thread(target=self._loop, name="agentprof-sampler", daemon=True)
        self.thread.start()

    def _cpu(self, ident):
        try:
            clock = self.clocks.get(ident)
            if clock is None:
                clock = self.clocks[ident] = [time.pthread_getcpuclockid(ident), None]
            now = time.clock_gettime_ns(clock[0])
        except (OSError, AttributeError, OverflowError):
            return 0
        before, clock[1] = clock[1], now
        return 0 if before is None else max(0, now - before)

    def _stack(self, frame):
        out = []
        while frame is not None:
            code = frame.f_code
            out.append((code.co_filename, getattr(code, "co_qualname", code.co_name),
                        frame.f_lineno or code.co_firstlineno, code.co_firstlineno))
            frame = frame.f_back
        # The host's own frames under the check are not the check's.
        while out and out[-1][0] in _HOST_FILES:
            out.pop()
        return tuple(out)

    def _loop(self):
        import threading
        me = threading.get_ident()
        own = time.pthread_getcpuclockid(me)
        c0 = time.clock_gettime_ns(own)
        last = time.perf_counter_ns()
        nxt = time.perf_counter()
        while not self.stop:
            nxt += self.period
            delay = nxt - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            else:
                nxt = time.perf_counter()
            now = time.perf_counter_ns()
            wall, last = now - last, now
            if not self.active:
                continue
            try:
                frames = sys._current_frames()
            except Exception:
                self.dropped += 1
                continue
            for ident, frame in frames.items():
                if ident == me:
                    continue
                cpu = self._cpu(ident)
                stack = self._stack(frame)
                if not stack:
                    continue
                key = ("main" if ident == self.main else "thread %d" % ident, stack)
                v = self.stacks.get(key)
                if v is None:
                    self.stacks[key] = [1, wall, cpu]
                else:
                    v[0] += 1
                    v[1] += wall
                    v[2] += cpu
            del frames
        self.cpu_ns = time.clock_gettime_ns(own) - c0

    def begin(self):
        # Each thread's CPU is counted from here.
        for ident in list(sys._current_frames()):
            self._cpu(ident)
        # This thread needs the GIL to look: a check running pure Python holds it for the
        # switch interval (5 ms) at a time, so with the default interval it would be seen
        # only when it calls into C code that releases the GIL. A quarter of the sampling
        # period keeps the look close to its time, for the run only.
        self.switch = sys.getswitchinterval()
        sys.setswitchinterval(min(self.switch, self.period / 4))
        self.active = True

    def end(self):
        self.active = False
        self.stop = True
        self.thread.join()
        return {"stacks": [[k[0], [list(f) for f in k[1]], v[0], v[1], v[2]]
                           for k, v in self.stacks.items()],
                "sampler_cpu_ns": self.cpu_ns, "dropped": self.dropped}


def run(msg):
    global PROFILE, _NOT_THE_CHECKS
    check = CHECKS[msg["instance"]]
    _new_run()
    LOG_LEVEL[0] = int(msg.get("log_level") or 30)
    import logging
    logging.getLogger().setLevel(LOG_LEVEL[0])
    prof = None
    if msg.get("profile"):
        import cProfile
        prof = cProfile.Profile()
    sampler = _Sampler(msg["sample_hz"]) if msg.get("sample_hz") else None
    snap0 = None
    traced = bool(msg.get("memory"))
    if traced:
        import tracemalloc
        if not tracemalloc.is_tracing():
            tracemalloc.start(int(MEMORY_OPTS["frames"]))
            _NOT_THE_CHECKS = _HOST_FILES + (tracemalloc.__file__,)
        if msg.get("memory_lines", True):
            snap0 = _snapshot()
    mark(b"r")
    wait_mark(b"g")
    u0, s0 = _rusage()
    # The CPU clock's window sits inside the wall clock's, so a run's CPU (one thread) never
    # reads more than its wall time.
    t0 = time.perf_counter()
    c0 = time.process_time()
    if traced:
        # Traced memory is read right around run(): what this host allocates for its own
        # timings and replies is not the check's.
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
    if prof is not None:
        prof.enable()
    if sampler is not None:
        sampler.begin()
    count = msg.get("count")
    counted = None
    perf = _perf_counter(*count["perf"]) if isinstance(count, dict) else None
    try:
        if BREAKPOINT[0] is not None:
            error = _debug(check, BREAKPOINT[0])
        elif count == "valgrind":
            error = _bracket(_counter(), check.run)
        elif perf is not None:
            c0 = _perf_read(perf)
            error = check.run()
            counted = _perf_read(perf) - c0
        else:
            error = check.run()
    except BaseException:  # a check's run() that raises past the base class
        error = json.dumps([{"message": "run() raised", "traceback": traceback.format_exc()}])
    if sampler is not None:
        sampler.active = False
        sys.setswitchinterval(sampler.switch)
    if prof is not None:
        prof.disable()
    if traced:
        current, peak = tracemalloc.get_traced_memory()
    c1 = time.process_time()
    wall = time.perf_counter() - t0
    u1, s1 = _rusage()
    tracer = None
    if traced:
        import tracemalloc
        tracer = tracemalloc.get_tracemalloc_memory()
    mark(b"d")
    wait_mark(b"c")
    if prof is not None:
        import pstats
        if PROFILE is None:
            PROFILE = pstats.Stats(prof)
        else:
            PROFILE.add(prof)
    memory = None
    if traced:
        peak -= base
        memory = {"traced_peak": max(0, peak), "traced_kept": current - base, "top": [],
                  "tracer_bytes": tracer, "snapshots": snap0 is not None}
    if snap0 is not None:
        snap1 = _snapshot()
        if MEMORY["first"] is None:
            MEMORY["first"] = snap1
        MEMORY["last"] = snap1
        diff = _grown(snap1, snap0)
        memory["top"] = _lines(diff)
    get_warnings = getattr(check, "get_warnings", None)
    warnings = list(get_warnings()) if callable(get_warnings) else []
    return {
        "sampled": sampler.end() if sampler is not None else None,
        "error": _format_error(error),
        "wall_s": wall,
        "cpu_user_s": u1 - u0,
        "cpu_total_s": c1 - c0,
        "cpu_system_s": s1 - s0,
        "metrics": RUN["metrics"],
        "service_checks": RUN["service_checks"],
        "events": RUN["events"],
        "warnings": [str(w) for w in warnings] + RUN["warnings"]
        + (["%d log records past the %d a run kept were dropped" % (RUN["logs_dropped"], MAX_LOGS)]
           if RUN["logs_dropped"] else []),
        "logs": RUN["logs"],
        "invalid": RUN["invalid"],
        "dropped": RUN["dropped"],
        "memory": memory,
        "instructions": counted,
    }


def _breakpoint_line(cls, line):
    """`-b LINE` as the Agent reads it: a line of the check's file inside its `check` method;
    0 is the method's first statement and a negative number counts from its last line (-1 the
    last). Anything else is an error that names the method's lines."""
    import inspect
    method = getattr(cls, "check", None)
    try:
        source, start = inspect.getsourcelines(method)
    except (OSError, TypeError):
        raise ValueError("--breakpoint %d: the check's `check` method has no source to stop in" % line)
    end = start + len(source) - 1
    body = [start + i for i, text in enumerate(source)
            if i > 0 and text.strip() and not text.strip().startswith("#")]
    if line == 0:
        line = body[0] if body else start
    elif line < 0:
        line = end + line + 1
    if not start < line <= end:
        raise ValueError("Line %d is not part of the check method (%s:%d-%d): give a line of "
                         "its body, 0 for its first statement or -1 for its last line"
                         % (line, inspect.getsourcefile(method), start, end))
    return line


def _debug(check, line):
    """check.run() with pdb stopping at `line` of the check's file, on the terminal
    (/dev/tty: this worker's stdin and stdout carry agentprof's protocol)."""
    import inspect
    import pdb

    class CheckPdb(pdb.Pdb):
        """pdb without this host's frames: `w`, `u` and `d` see the check's stack, from the
        base class's run() up, as under the Agent."""

        def get_stack(self, f, t):
            stack, i = pdb.Pdb.get_stack(self, f, t)
            current = stack[i] if 0 <= i < len(stack) else None
            kept = [e for e in stack if e[0].f_code.co_filename not in _HOST_FILES]
            if not kept:
                return stack, i
            at = next((n for n, e in enumerate(kept) if e is current), len(kept) - 1)
            return kept, at

    path = inspect.getsourcefile(type(check))
    with open("/dev/tty") as tty_in, open("/dev/tty", "w") as tty_out:
        dbg = CheckPdb(stdin=tty_in, stdout=tty_out)
        why = dbg.set_break(path, line)
        if why:
            raise ValueError("--breakpoint %d: %s" % (line, why))
        tty_out.write("agentprof: pdb stops at %s:%d ('c' to go on)\n" % (path, line))
        tty_out.flush()
        dbg.reset()
        # Stop only at the breakpoint: `continue` from this frame, as if the user typed it.
        dbg.botframe = sys._getframe()
        dbg.set_continue()
        sys.settrace(dbg.trace_dispatch)
        try:
            return check.run()
        finally:
            sys.settrace(None)


def _format_error(error):
    if not error:
        return None
    try:
        parsed = json.loads(error)
        return "\n".join((e.get("traceback") or e.get("message") or "").rstrip() for e in parsed)
    except Exception:
        return str(error)


def stats(msg):
    """The cumulative cProfile statistics, in pstats' own order and numbers."""
    if PROFILE is None:
        return {"functions": 0, "rows": [], "total_calls": 0, "prim_calls": 0, "total_tt": 0.0, "folded": []}
    st = PROFILE
    st.sort_stats("cumulative")
    rows = []
    for func in st.fcn_list[: msg["top"]]:
        cc, nc, tt, ct, _callers = st.stats[func]
        rows.append([func[0], func[1], func[2], cc, nc, tt, ct])
    return {
        "functions": len(st.stats),
        "rows": rows,
        "total_calls": st.total_calls,
        "prim_calls": st.prim_calls,
        "total_tt": st.total_tt,
        "folded": folded(st.stats) if msg.get("folded") else [],
    }


def _label(func):
    filename, line, name = func
    if filename == "~":
        return name
    return "%s (%s:%d)" % (name, os.path.basename(filename), line)


def folded(raw):
    """Stacks for a flamegraph from cProfile's caller edges: each function's cumulative time
    is split among its callees in proportion to the edges' cumulative times."""
    callees = {}
    has_caller = set()
    for func, (_cc, _nc, _tt, _ct, callers) in raw.items():
        for caller, edge in callers.items():
            callees.setdefault(caller, []).append((func, edge[3]))
            has_caller.add(func)
    roots = [f for f in raw if f not in has_caller]
    out = {}

    # The walk follows every caller path, which grows fast in a big call graph: shares under a
    # microsecond are not split further (they stay with their caller), and the walk stops
    # after a bounded number of frames.
    visits = [0]

    def walk(func, budget, stack, depth):
        if budget <= 0 or depth > 64:
            return
        visits[0] += 1
        stack.append(_label(func))
        children = [(c, t) for c, t in callees.get(func, []) if _label(c) not in stack]
        total = sum(t for _, t in children)
        scale = min(1.0, budget / total) if total > 0 else 0.0
        used = 0.0
        for child, t in children:
            share = t * scale
            if share < 1e-6 or visits[0] > 200000:
                continue
            used += share
            walk(child, share, stack, depth + 1)
        own = budget - used
        if own > 0:
            key = ";".join(stack)
            out[key] = out.get(key, 0.0) + own
        stack.pop()

    for r in roots:
        walk(r, raw[r][3], [], 0)
    return ["%s %d" % (k, max(1, int(round(v * 1e6)))) for k, v in out.items() if v * 1e6 >= 0.5]


def metadata(msg):
    """What the checks set with set_metadata (the check's version, as `agent check` shows it):
    [instance index, name, value], in the order the instances were loaded."""
    index = {c.check_id: i for i, c in enumerate(CHECKS)}
    rows = [[index.get(cid, -1), name, "%s" % (value,)] for (cid, name), value in _METADATA.items()]
    rows.sort(key=lambda r: (r[0], r[1]))
    return {"metadata": rows}


def memgrowth(msg):
    """Lines whose live memory grew most between the first and the last traced run."""
    if MEMORY["first"] is None or MEMORY["last"] is MEMORY["first"]:
        return {"top": []}
    diff = _grown(MEMORY["last"], MEMORY["first"])
    return {"top": _lines(diff, msg.get("top", 10))}


def dump(msg):
    if PROFILE is None:
        raise ValueError("no profile was taken")
    PROFILE.dump_stats(msg["path"])
    return {"ok": True}


def reset_stats(msg):
    """Forgets the cProfile statistics so far (a gate's warm-up run)."""
    global PROFILE
    PROFILE = None
    return {"ok": True}


def calibrate(msg):
    """The machine's speed for pure Python right now: CPU seconds of a fixed loop, the median
    of a few repetitions. A gate divides a check's run time by it, so a machine that slowed
    down as a whole does not look like a slower check. The loop allocates nothing (small ints
    only), so tracemalloc, when on, does not change it."""
    times = []
    repeat = itertools.repeat
    for _ in range(int(msg.get("repeat", 7))):
        t0 = time.process_time()
        x = 0
        for _ in repeat(None, 30000):
            x = ((x ^ 93) + 7) & 127
        times.append(time.process_time() - t0)
    times.sort()
    return {"seconds": times[len(times) // 2], "loop": "python-smallint-30000"}


HANDLERS = {"load": load, "run": run, "stats": stats, "dump": dump, "memgrowth": memgrowth,
            "calibrate": calibrate, "reset_stats": reset_stats, "metadata": metadata,
            "count_start": count_start}


def main():
    while True:
        try:
            msg = recv()
        except EOFError:
            return
        handler = HANDLERS.get(msg.get("op"))
        try:
            reply = handler(msg) if handler else {"error": "unknown op %r" % msg.get("op")}
        except EOFError:
            return
        except BaseException:
            reply = {"error": traceback.format_exc()}
        send(reply)


main()
