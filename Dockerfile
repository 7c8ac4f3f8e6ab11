# syntax=docker/dockerfile:1
# goreka: a static binary on distroless, running as a non-root user.
#   docker build -t goreka .
#   docker run -p 8761:8761 goreka --spring.security.user.password=secret
# Configuration: --name=value arguments, environment variables
# (SPRING_SECURITY_USER_PASSWORD, EUREKA_CLIENT_SERVICEURL_DEFAULTZONE, ...)
# or an application.yml mounted at /config/application.yml (the working
# directory, which Spring-style lookup reads as ./application.yml).
# Probes: /actuator/health/liveness and /actuator/health/readiness (no auth).

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags="-s -w" -o /out/goreka ./cmd/goreka

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/goreka /goreka
WORKDIR /config
USER nonroot:nonroot
EXPOSE 8761
ENTRYPOINT ["/goreka"]
