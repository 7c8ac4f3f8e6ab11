package compat.grpcxds;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.grpc.CallOptions;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCalls;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * The grpc-java xDS agent of goreka's compat suite.
 *
 * <p>Usage: {@code Agent CONTROL_PORT TARGET [NAME=PORT ...]}. For each NAME=PORT it serves a plain grpc-java server
 * on 127.0.0.1:PORT whose one method, {@code echo.Echo/Who}, answers NAME. It opens one channel to TARGET (such as
 * {@code xds:///echo}) with grpc-xds, which reads its bootstrap from GRPC_XDS_BOOTSTRAP, and serves an HTTP control
 * port on 127.0.0.1:CONTROL_PORT: {@code GET /calls?n=N} makes N calls over that channel, one after the other, and
 * answers how many each NAME answered, as JSON ({@code {"s1":45,"s2":5}}, failures under "error").
 *
 * <p>The method needs no generated code: its messages are UTF-8 strings (a custom marshaller), so the build is
 * plain Maven without protoc.
 */
public final class Agent {
    private static final MethodDescriptor.Marshaller<String> UTF8 = new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(String value) {
            return new ByteArrayInputStream(value.getBytes(StandardCharsets.UTF_8));
        }

        @Override
        public String parse(InputStream stream) {
            try {
                return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    };

    static final MethodDescriptor<String, String> WHO = MethodDescriptor.<String, String>newBuilder()
            .setType(MethodDescriptor.MethodType.UNARY)
            .setFullMethodName("echo.Echo/Who")
            .setRequestMarshaller(UTF8)
            .setResponseMarshaller(UTF8)
            .build();

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: Agent CONTROL_PORT TARGET [NAME=PORT ...]");
            System.exit(2);
        }
        List<Server> servers = new ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            String[] np = args[i].split("=", 2);
            String name = np[0];
            ServerServiceDefinition svc = ServerServiceDefinition.builder("echo.Echo")
                    .addMethod(WHO, ServerCalls.asyncUnaryCall((req, obs) -> {
                        obs.onNext(name);
                        obs.onCompleted();
                    }))
                    .build();
            servers.add(NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", Integer.parseInt(np[1])))
                    .addService(svc).build().start());
        }
        ManagedChannel channel = Grpc.newChannelBuilder(args[1], InsecureChannelCredentials.create()).build();
        HttpServer http = HttpServer.create(new InetSocketAddress("127.0.0.1", Integer.parseInt(args[0])), 16);
        http.createContext("/calls", ex -> calls(ex, channel));
        http.start();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            http.stop(0);
            channel.shutdownNow();
            servers.forEach(Server::shutdownNow);
        }));
        System.out.println("grpc-java agent ready: " + servers.size() + " servers, channel to " + args[1]);
        for (Server s : servers) {
            s.awaitTermination();
        }
        Thread.currentThread().join();
    }

    private static void calls(HttpExchange ex, ManagedChannel channel) throws IOException {
        int n = 1;
        String q = ex.getRequestURI().getQuery();
        if (q != null && q.startsWith("n=")) {
            n = Integer.parseInt(q.substring(2));
        }
        Map<String, Integer> seen = new TreeMap<>();
        String lastError = "";
        for (int i = 0; i < n; i++) {
            try {
                // waitForReady: the first calls wait for the xDS resources instead of failing at once.
                String who = ClientCalls.blockingUnaryCall(channel, WHO,
                        CallOptions.DEFAULT.withWaitForReady().withDeadlineAfter(5, TimeUnit.SECONDS), "who");
                seen.merge(who, 1, Integer::sum);
            } catch (RuntimeException e) {
                seen.merge("error", 1, Integer::sum);
                lastError = String.valueOf(e.getMessage());
            }
        }
        StringBuilder b = new StringBuilder("{");
        for (Map.Entry<String, Integer> e : seen.entrySet()) {
            if (b.length() > 1) {
                b.append(',');
            }
            b.append('"').append(e.getKey()).append("\":").append(e.getValue());
        }
        if (!lastError.isEmpty()) {
            b.append(b.length() > 1 ? "," : "").append("\"lastError\":\"")
                    .append(lastError.replace("\\", "\\\\").replace("\"", "'").replace("\n", " ")).append('"');
        }
        byte[] body = b.append('}').toString().getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.sendResponseHeaders(200, body.length);
        try (OutputStream o = ex.getResponseBody()) {
            o.write(body);
        }
    }
}
