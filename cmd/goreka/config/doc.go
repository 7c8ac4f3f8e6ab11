// Package config loads goreka's configuration the way a Spring Boot Eureka
// server takes it, so existing command lines, environment variables and
// application.yml files keep working.
//
// Sources, highest precedence first:
//
//  1. command-line arguments --name=value (a bare --name means "true")
//  2. SPRING_APPLICATION_JSON (or --spring.application.json), nested JSON
//  3. environment variables starting with SERVER_, SPRING_, EUREKA_, GOREKA_
//     or LOGGING_ (EUREKA_SERVER_ENABLESELFPRESERVATION ->
//     eureka.server.enableselfpreservation)
//  4. application-{profile}.yml|yaml|properties
//  5. application.yml|yaml|properties
//
// Files are looked up in the working directory and in ./config/ (which wins),
// or at --spring.config.location (comma list, "optional:" prefix, files or
// directories ending in "/"), plus --spring.config.additional-location.
// Within one location .properties beats .yml beats .yaml, as in Spring Boot.
// Multi-document YAML (---) and properties (#---) files are supported; a
// document with spring.config.activate.on-profile (or the legacy
// spring.profiles) applies only when its profile expression matches the
// active profiles (spring.profiles.active; "default" when none is active).
//
// Property names compare in Spring Boot's relaxed form: lower case with "-"
// removed, so enable-self-preservation, enableSelfPreservation and
// ENABLESELFPRESERVATION are one property. The keys of map properties
// (eureka.client.service-url.*, eureka.instance.metadata-map.*,
// eureka.client.availability-zones.*) keep their text. Unlike Spring,
// goreka also takes default-zone and defaultzone (from the environment) as
// the defaultZone of eureka.client.service-url.
//
// Values may hold ${name} and ${name:default} placeholders, resolved against
// every source and, failing that, against the raw environment.
package config
