package compat.agent;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.netflix.appinfo.ApplicationInfoManager;
import com.netflix.appinfo.InstanceInfo;
import com.netflix.appinfo.MyDataCenterInstanceConfig;
import com.netflix.appinfo.providers.EurekaConfigBasedInstanceInfoProvider;
import com.netflix.config.ConfigurationManager;
import com.netflix.discovery.DefaultEurekaClientConfig;
import com.netflix.discovery.DiscoveryClient;
import com.netflix.discovery.Jersey3DiscoveryClientOptionalArgs;
import com.netflix.discovery.shared.Application;
import com.netflix.discovery.shared.Applications;
import com.netflix.discovery.shared.transport.jersey3.Jersey3TransportClientFactories;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Compat agent: the Netflix eureka-client (2.0.x, Jersey 3 transport, legacy JSON codec) used directly, without
 * Spring. Configured only from the environment (APP_NAME, PORT, EUREKA_URL, METADATA); control endpoints served
 * by the JDK's com.sun.net.httpserver on 127.0.0.1:PORT. See README.md for the convention.
 */
public final class NetflixJavaAgent {

    private static final Logger log = LoggerFactory.getLogger(NetflixJavaAgent.class);
    private static final ObjectMapper JSON = new ObjectMapper();

    private final String appName;
    private final int port;
    private final String instanceId;
    private volatile DiscoveryClient client;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    private NetflixJavaAgent(String appName, int port) {
        this.appName = appName;
        this.port = port;
        this.instanceId = appName + ":" + port;
    }

    public static void main(String[] args) throws Exception {
        String app = env("APP_NAME", null);
        int port = Integer.parseInt(env("PORT", null));
        String eurekaUrl = env("EUREKA_URL", null);
        new NetflixJavaAgent(app, port).run(eurekaUrl, System.getenv("METADATA"));
    }

    private static String env(String name, String dflt) {
        String v = System.getenv(name);
        if (v == null || v.isBlank()) {
            if (dflt == null) {
                throw new IllegalArgumentException("environment variable " + name + " is required");
            }
            return dflt;
        }
        return v.trim();
    }

    /** Archaius properties read by MyDataCenterInstanceConfig / DefaultEurekaClientConfig (namespace "eureka."). */
    private void configure(String eurekaUrl, String metadata) {
        var c = ConfigurationManager.getConfigInstance();
        // instance
        c.setProperty("eureka.name", appName);
        c.setProperty("eureka.instanceId", instanceId);
        c.setProperty("eureka.port", port);
        c.setProperty("eureka.port.enabled", true);
        c.setProperty("eureka.securePort.enabled", false);
        c.setProperty("eureka.vipAddress", appName);
        c.setProperty("eureka.secureVipAddress", appName);
        c.setProperty("eureka.lease.renewalInterval", 1);
        c.setProperty("eureka.lease.duration", 3);
        c.setProperty("eureka.homePageUrlPath", "/");
        c.setProperty("eureka.statusPageUrlPath", "/health");
        c.setProperty("eureka.healthCheckUrlPath", "/health");
        if (metadata != null) {
            for (String kv : metadata.split(",")) {
                int eq = kv.indexOf('=');
                if (eq > 0) {
                    c.setProperty("eureka.metadata." + kv.substring(0, eq).trim(), kv.substring(eq + 1).trim());
                }
            }
        }
        // client
        c.setProperty("eureka.serviceUrl.default", eurekaUrl);
        c.setProperty("eureka.registration.enabled", true);
        c.setProperty("eureka.shouldFetchRegistry", true);
        c.setProperty("eureka.disableDelta", false);
        c.setProperty("eureka.client.refresh.interval", 1);
        c.setProperty("eureka.appinfo.replicate.interval", 1);
        c.setProperty("eureka.appinfo.initial.replicate.time", 1);
        c.setProperty("eureka.shouldUnregisterOnShutdown", true);
        c.setProperty("eureka.eurekaServer.connectTimeout", 2);
        c.setProperty("eureka.eurekaServer.readTimeout", 5);
    }

    private void run(String eurekaUrl, String metadata) throws Exception {
        configure(eurekaUrl, metadata);

        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 64);
        server.setExecutor(Executors.newFixedThreadPool(4));
        server.createContext("/", this::handle);
        server.start();

        MyDataCenterInstanceConfig instanceConfig = new MyDataCenterInstanceConfig() {
            @Override
            public String getHostName(boolean refresh) {
                return "localhost";
            }

            @Override
            public String getIpAddress() {
                return "127.0.0.1";
            }
        };
        InstanceInfo info = new EurekaConfigBasedInstanceInfoProvider(instanceConfig).get();
        ApplicationInfoManager aim = new ApplicationInfoManager(instanceConfig, info);
        DiscoveryClient dc = new DiscoveryClient(aim, new DefaultEurekaClientConfig(),
                Jersey3TransportClientFactories.getInstance(), new Jersey3DiscoveryClientOptionalArgs());
        // STARTING -> UP: the status listener triggers the on-demand register (POST), as in a real Netflix app.
        aim.setInstanceStatus(InstanceInfo.InstanceStatus.UP);
        client = dc;
        log.info("AGENT-STARTED {} on 127.0.0.1:{} against {}", instanceId, port, eurekaUrl.replaceAll("//[^@/]*@", "//***@"));

        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            log.info("AGENT-STOPPING {}: DiscoveryClient.shutdown() (status DOWN + DELETE)", instanceId);
            try {
                dc.shutdown();
            } finally {
                server.stop(0);
                stopped.countDown();
            }
        }, "agent-shutdown"));
        stopped.await();
    }

    // ---- control endpoints ----

    private void handle(HttpExchange ex) throws IOException {
        try (ex) {
            String path = ex.getRequestURI().getPath();
            if (!"GET".equals(ex.getRequestMethod())) {
                send(ex, 405, "text/plain", "method not allowed");
                return;
            }
            if (path.equals("/hello")) {
                send(ex, 200, "text/plain", "hello from " + instanceId);
                return;
            }
            DiscoveryClient dc = client;
            if (dc == null) {
                send(ex, 503, "text/plain", "starting");
                return;
            }
            if (path.equals("/health")) {
                send(ex, 200, "text/plain", "UP");
            } else if (path.equals("/raw")) {
                send(ex, 200, "application/json", JSON.writeValueAsString(raw(dc)));
            } else if (path.startsWith("/seen/") && path.endsWith("/count")) {
                String svc = path.substring("/seen/".length(), path.length() - "/count".length());
                send(ex, 200, "text/plain", Integer.toString(seen(dc, svc).size()));
            } else if (path.startsWith("/seen/")) {
                String svc = path.substring("/seen/".length());
                List<Map<String, Object>> out = new ArrayList<>();
                for (InstanceInfo ii : seen(dc, svc)) {
                    Map<String, Object> m = new LinkedHashMap<>();
                    m.put("instanceId", ii.getInstanceId());
                    m.put("host", ii.getHostName());
                    m.put("port", ii.getPort());
                    m.put("metadata", new TreeMap<>(ii.getMetadata()));
                    out.add(m);
                }
                send(ex, 200, "application/json", JSON.writeValueAsString(out));
            } else if (path.startsWith("/call/")) {
                call(ex, dc, path.substring("/call/".length()));
            } else {
                send(ex, 404, "text/plain", "not found");
            }
        } catch (Exception e) {
            log.warn("control request failed", e);
        }
    }

    /** Normal discovery API: VIP lookup (the client indexes VIPs upper-case), UP-only filtering by the client. */
    private static List<InstanceInfo> seen(DiscoveryClient dc, String service) {
        List<InstanceInfo> up = new ArrayList<>();
        for (InstanceInfo ii : dc.getInstancesByVipAddress(service, false)) {
            if (ii.getStatus() == InstanceInfo.InstanceStatus.UP) {
                up.add(ii);
            }
        }
        return up;
    }

    private static Map<String, Object> raw(DiscoveryClient dc) {
        Applications apps = dc.getApplications();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("localHashCode", apps.getReconcileHashCode());
        out.put("remoteStatus", String.valueOf(dc.getInstanceRemoteStatus()));
        Map<String, List<String>> byApp = new TreeMap<>();
        for (Application app : apps.getRegisteredApplications()) {
            List<String> rows = new ArrayList<>();
            for (InstanceInfo ii : app.getInstancesAsIsFromEureka()) {
                rows.add(ii.getId() + " " + ii.getStatus());
            }
            rows.sort(null);
            byApp.put(app.getName(), rows);
        }
        out.put("apps", byApp);
        return out;
    }

    private void call(HttpExchange ex, DiscoveryClient dc, String service) throws IOException {
        InstanceInfo target;
        try {
            target = dc.getNextServerFromEureka(service.toLowerCase(Locale.ROOT), false);
        } catch (RuntimeException e) { // "No matches for the virtual host name :..."
            send(ex, 503, "text/plain", "no instance of " + service + ": " + e.getMessage());
            return;
        }
        URI uri = URI.create("http://" + target.getHostName() + ":" + target.getPort() + "/hello");
        try {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(5)).GET().build(),
                    HttpResponse.BodyHandlers.ofString());
            send(ex, r.statusCode(), "text/plain", r.body());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            send(ex, 502, "text/plain", "interrupted");
        } catch (IOException e) {
            send(ex, 502, "text/plain", "call to " + uri + " failed: " + e);
        }
    }

    private static void send(HttpExchange ex, int status, String type, String body) throws IOException {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", type + "; charset=utf-8");
        ex.sendResponseHeaders(status, b.length);
        try (OutputStream os = ex.getResponseBody()) {
            os.write(b);
        }
    }
}
