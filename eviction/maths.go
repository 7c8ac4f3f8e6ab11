package eviction

import (
	"time"

	"github.com/goreka/goreka/registry"
)

// DefaultExpectedClientRenewalInterval is what Eureka assumes when
// expected-client-renewal-interval-seconds is not positive: the clients'
// default lease renewal interval.
const DefaultExpectedClientRenewalInterval = registry.DefaultRenewalInterval

// Threshold is Eureka's numberOfRenewsPerMinThreshold
// (AbstractInstanceRegistry.updateRenewsPerMinThreshold): the renewals per
// minute that expected clients, each renewing every interval, would send,
// times percent, truncated towards zero like Java's (int) cast.
//
// The interval counts in whole seconds, as the Java property is an int;
// an interval under one second is treated as not positive, which means
// DefaultExpectedClientRenewalInterval. The products are evaluated in the
// same order and in the same float64 arithmetic as Java, so the result is
// the same number a Java peer shows.
func Threshold(expected int, interval time.Duration, percent float64) int {
	secs := int64(interval / time.Second)
	if secs <= 0 {
		secs = int64(DefaultExpectedClientRenewalInterval / time.Second)
	}
	perMin := 60.0 / float64(secs)
	return int(float64(expected) * perMin * percent)
}

// EvictionLimit is the most leases one eviction run may remove from a
// registry of size leases: size - int(size*percent)
// (AbstractInstanceRegistry.evict). With 0.85 that is 15 % of the
// registry, rounded up: 10 leases -> 2, 100 -> 15, 1 -> 1.
func EvictionLimit(size int, percent float64) int {
	return size - int(float64(size)*percent)
}

// LeaseExpirationEnabled is PeerAwareInstanceRegistryImpl.isLeaseExpirationEnabled:
// leases may expire when self-preservation is off, or when the renewals of
// the last minute are strictly above a positive threshold.
func LeaseExpirationEnabled(selfPreservation bool, threshold int, renewsLastMin int64) bool {
	return !selfPreservation || (threshold > 0 && renewsLastMin > int64(threshold))
}

// BelowThreshold is PeerAwareInstanceRegistryImpl.isBelowRenewThresold, the
// condition for the dashboard's red banner: renewals at or below the
// threshold, and more than wait since the server opened for traffic.
// A zero startup (not yet open) is never below.
func BelowThreshold(renewsLastMin int64, threshold int, startup, now time.Time, wait time.Duration) bool {
	return renewsLastMin <= int64(threshold) && !startup.IsZero() && now.After(startup.Add(wait))
}

// Compensation is EvictionTask.getCompensationTimeMs: how much later than
// its interval this run comes after the previous one (zero for the first
// run, when last is zero), counted in whole milliseconds. Eviction adds it
// to every lease's expiry, so that a server that was paused (GC, a
// suspended VM, a stepped clock) does not treat the pause as missed
// heartbeats. time.Time.Sub uses the monotonic readings when both times
// carry one (values from time.Now do).
func Compensation(last, now time.Time, interval time.Duration) time.Duration {
	if last.IsZero() {
		return 0
	}
	extra := now.Sub(last).Truncate(time.Millisecond) - interval
	return max(extra, 0)
}

// Banner texts of Spring Cloud's dashboard (templates/eureka/navbar.ftlh).
const (
	BannerBelowThresholdSelfPreservationOff = "RENEWALS ARE LESSER THAN THE THRESHOLD. THE SELF PRESERVATION MODE IS TURNED OFF. THIS MAY NOT PROTECT INSTANCE EXPIRY IN CASE OF NETWORK/OTHER PROBLEMS."
	BannerEmergency                         = "EMERGENCY! EUREKA MAY BE INCORRECTLY CLAIMING INSTANCES ARE UP WHEN THEY'RE NOT. RENEWALS ARE LESSER THAN THRESHOLD AND HENCE THE INSTANCES ARE NOT BEING EXPIRED JUST TO BE SAFE."
	BannerSelfPreservationOff               = "THE SELF PRESERVATION MODE IS TURNED OFF. THIS MAY NOT PROTECT INSTANCE EXPIRY IN CASE OF NETWORK/OTHER PROBLEMS."
)

// Banner picks the dashboard's red banner the way Spring's template does:
// below the threshold it is the emergency text (self-preservation on) or
// the "lesser than the threshold" text (off); otherwise only a disabled
// self-preservation shows a banner. "" means no banner.
func Banner(belowThreshold, selfPreservation bool) string {
	switch {
	case belowThreshold && selfPreservation:
		return BannerEmergency
	case belowThreshold:
		return BannerBelowThresholdSelfPreservationOff
	case !selfPreservation:
		return BannerSelfPreservationOff
	}
	return ""
}
