// A JVM service profiled by dd-trace-java (-javaagent:dd-java-agent.jar): it keeps a core
// busy for the milliseconds given while the agent's profiler uploads its JFR recordings.
public class Busy {
    static long spin(long until) {
        long x = 0;
        while (System.currentTimeMillis() < until) {
            for (int i = 0; i < 1_000_000; i++) {
                x += (long) i * i;
            }
        }
        return x;
    }

    public static void main(String[] args) {
        long ms = Long.parseLong(args[0]);
        System.out.println(spin(System.currentTimeMillis() + ms) != 1);
    }
}
