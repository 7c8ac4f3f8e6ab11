package agent;

import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.cloud.client.ServiceInstance;
import org.springframework.cloud.client.discovery.DiscoveryClient;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RestController;

/** Lists what Spring Cloud Kubernetes' DiscoveryClient sees, for goreka's export test. */
@SpringBootApplication
@RestController
public class Agent {
  private final DiscoveryClient discovery;

  public Agent(DiscoveryClient discovery) {
    this.discovery = discovery;
  }

  public static void main(String[] args) {
    SpringApplication.run(Agent.class, args);
  }

  /** The DiscoveryClient's services. */
  @GetMapping("/services")
  public List<String> services() {
    return discovery.getServices();
  }

  /** Each instance of a service as host, port and whether it is secure. */
  @GetMapping("/instances/{service}")
  public List<Map<String, Object>> instances(@PathVariable String service) {
    return discovery.getInstances(service).stream()
        .map((ServiceInstance i) -> Map.<String, Object>of("host", i.getHost(), "port", i.getPort(), "secure", i.isSecure()))
        .collect(Collectors.toList());
  }
}
