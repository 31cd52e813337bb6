# A Python program profiled by ddtrace (run under ddtrace-run by the receive tests): its
# CPU goes to busy_work.
import time, sys
def busy_work():
    x = 0
    for i in range(200000):
        x += i * i
    return x
end = time.time() + float(sys.argv[1])
while time.time() < end:
    busy_work()
print("done")
