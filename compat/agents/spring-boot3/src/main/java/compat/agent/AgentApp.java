package compat.agent;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;

import com.netflix.appinfo.InstanceInfo;
import com.netflix.discovery.EurekaClient;
import com.netflix.discovery.shared.Application;
import com.netflix.discovery.shared.Applications;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.availability.AvailabilityChangeEvent;
import org.springframework.boot.availability.LivenessState;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.cloud.client.ServiceInstance;
import org.springframework.cloud.client.discovery.DiscoveryClient;
import org.springframework.cloud.client.loadbalancer.LoadBalanced;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Primary;
import org.springframework.context.annotation.Scope;
import org.springframework.context.event.EventListener;
import org.springframework.http.ResponseEntity;
import org.springframework.http.client.SimpleClientHttpRequestFactory;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.client.RestClient;
import org.springframework.web.client.RestTemplate;

/**
 * The compat-suite agent for Spring Cloud Netflix Eureka clients (compat/README.md, "client-agent convention").
 * One source for Boot 3.5 (SCN 4.3, RestTemplate transport) and Boot 4.0 (SCN 5.0, RestClient transport): the
 * spring-boot4 POM compiles this directory. Everything here compiles against both.
 */
@SpringBootApplication
@RestController
public class AgentApp {

    private final DiscoveryClient discovery; // what application code sees: UP instances, by VIP
    private final EurekaClient eureka;       // the raw Netflix copy: all statuses, the reconcile hash
    private final RestTemplate restTemplate;
    private final RestClient.Builder restClient;
    private final String callClient;
    private final String instanceId;
    private final AtomicBoolean ready = new AtomicBoolean();
    private final ApplicationEventPublisher events;

    public AgentApp(DiscoveryClient discovery, EurekaClient eureka, @LoadBalanced RestTemplate restTemplate,
            @LoadBalanced RestClient.Builder restClient, @Value("${compat.call-client:rest-client}") String callClient,
            @Value("${eureka.instance.instance-id}") String instanceId, ApplicationEventPublisher events) {
        this.discovery = discovery;
        this.eureka = eureka;
        this.restTemplate = restTemplate;
        this.restClient = restClient;
        this.callClient = callClient;
        this.instanceId = instanceId;
        this.events = events;
    }

    /** METADATA=k1=v1,k2=v2 becomes eureka.instance.metadata-map.k1=v1 ... on the command line. */
    public static void main(String[] args) {
        List<String> all = new ArrayList<>(List.of(args));
        String md = System.getenv("METADATA");
        if (md != null && !md.isBlank()) {
            for (String kv : md.split(",")) {
                int eq = kv.indexOf('=');
                if (eq > 0) {
                    all.add("--eureka.instance.metadata-map." + kv.substring(0, eq).trim() + "=" + kv.substring(eq + 1).trim());
                }
            }
        }
        SpringApplication.run(AgentApp.class, all.toArray(new String[0]));
    }

    /** The load-balanced clients of /call; a nested class so that the controller can take them in its constructor. */
    @Configuration(proxyBeanMethods = false)
    static class Clients {
        private static SimpleClientHttpRequestFactory shortTimeouts() {
            SimpleClientHttpRequestFactory f = new SimpleClientHttpRequestFactory();
            f.setConnectTimeout(2000);
            f.setReadTimeout(5000);
            return f;
        }

        @Bean
        @LoadBalanced
        RestTemplate loadBalancedRestTemplate() {
            return new RestTemplate(shortTimeouts());
        }

        /**
         * SCN 5's RestClient Eureka transport takes the context's RestClient.Builder; without a primary plain one it
         * would get the load-balanced builder and try to resolve the Eureka server's host as a service id.
         */
        @Bean
        @Primary
        @Scope("prototype")
        RestClient.Builder plainRestClientBuilder() {
            return RestClient.builder();
        }

        @Bean
        @LoadBalanced
        RestClient.Builder loadBalancedRestClientBuilder() {
            return RestClient.builder().requestFactory(shortTimeouts());
        }
    }

    /**
     * Switches the actuator's health (/actuator/health, the healthCheckUrl Spring registers) DOWN or UP through the
     * application's liveness state: LivenessState.BROKEN makes the livenessState indicator (enabled in
     * application.yml, part of the root health) DOWN, so the endpoint answers 503 {"status":"DOWN"}. The same core
     * API on Boot 3 and 4 (the actuator's HealthIndicator moved packages in Boot 4). The Eureka client's own
     * health check stays off (eureka.client.healthcheck.enabled=false, the default): the client keeps reporting
     * UP, only a server that probes the health URL sees DOWN. Answers the state set.
     */
    @PostMapping("/health-switch/{state}")
    public ResponseEntity<String> healthSwitch(@PathVariable String state) {
        LivenessState ls;
        switch (state.toUpperCase()) {
            case "UP" -> ls = LivenessState.CORRECT;
            case "DOWN" -> ls = LivenessState.BROKEN;
            default -> {
                return ResponseEntity.badRequest().body("state " + state + ": want UP or DOWN");
            }
        }
        AvailabilityChangeEvent.publish(events, this, ls);
        return ResponseEntity.ok(state.toUpperCase());
    }

    @EventListener(ApplicationReadyEvent.class)
    public void onReady() {
        ready.set(true);
    }

    @GetMapping("/health")
    public ResponseEntity<String> health() {
        return ready.get() ? ResponseEntity.ok("UP") : ResponseEntity.status(503).body("STARTING");
    }

    @GetMapping("/hello")
    public String hello() {
        return "hello from " + instanceId;
    }

    @GetMapping("/seen/{service}")
    public List<Map<String, Object>> instances(@PathVariable String service) {
        List<Map<String, Object>> list = new ArrayList<>();
        for (ServiceInstance si : discovery.getInstances(service)) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("instanceId", si.getInstanceId());
            m.put("host", si.getHost());
            m.put("port", si.getPort());
            m.put("metadata", new TreeMap<>(si.getMetadata()));
            list.add(m);
        }
        return list;
    }

    @GetMapping("/seen/{service}/count")
    public int count(@PathVariable String service) {
        return discovery.getInstances(service).size();
    }

    @GetMapping("/raw")
    public Map<String, Object> raw() {
        Applications apps = eureka.getApplications();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("localHashCode", apps.getReconcileHashCode());
        out.put("remoteStatus", String.valueOf(eureka.getInstanceRemoteStatus()));
        Map<String, List<String>> byApp = new TreeMap<>();
        for (Application app : apps.getRegisteredApplications()) {
            List<String> rows = new ArrayList<>();
            for (InstanceInfo ii : app.getInstancesAsIsFromEureka()) {
                rows.add(ii.getId() + " " + ii.getStatus());
            }
            byApp.put(app.getName(), rows);
        }
        out.put("apps", byApp);
        return out;
    }

    /** The user journey: a client-side load-balanced call to http://{service}/hello. */
    @GetMapping("/call/{service}")
    public ResponseEntity<String> call(@PathVariable String service) {
        if (discovery.getInstances(service).isEmpty()) {
            return ResponseEntity.status(503).body("no instance of " + service);
        }
        String url = "http://" + service + "/hello";
        try {
            String body = "rest-template".equals(callClient)
                    ? restTemplate.getForObject(url, String.class)
                    : restClient.build().get().uri(url).retrieve().body(String.class);
            return ResponseEntity.ok(body);
        } catch (RuntimeException e) {
            return ResponseEntity.status(503).body(callClient + ": " + e);
        }
    }
}
