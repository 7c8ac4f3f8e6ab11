package server

import (
	"fmt"
	"runtime"
	"strconv"
	"time"

	"github.com/goreka/goreka/registry"
)

// ProcessStatus is a StatusSource: what Eureka's StatusResource shows of
// this server on GET /eureka/status, and the dashboard in General Info.
// Each namespace's status lists the replicas of its own replication.
type ProcessStatus struct {
	Environment string    // eureka.environment
	Started     time.Time // when the process started
	// Self is this server's own registration; it is shown as the
	// coordinating discovery server here (what it registers with its peers
	// says false: each server decides). nil shows no instanceInfo.
	Self *registry.Instance
	// Replicas are the namespace's replicas (a *replication.Replicator).
	Replicas interface {
		Replicas() (registered, available, unavailable []string)
	}
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// StatusInfo is Eureka's StatusInfo: the general stats (environment, CPUs,
// memory, uptime), the replica stats and this server's instance.
func (p *ProcessStatus) StatusInfo() StatusInfo {
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st := StatusInfo{
		General: [][2]string{
			{"environment", p.Environment},
			{"num-of-cpus", strconv.Itoa(runtime.NumCPU())},
			{"total-avail-memory", fmt.Sprintf("%dmb", ms.Sys>>20)},
			{"current-memory-usage", fmt.Sprintf("%dmb (%d%%)", ms.HeapAlloc>>20, percent(ms.HeapAlloc, ms.Sys))},
			{"server-uptime", formatUptime(now().Sub(p.Started))},
		},
	}
	var registered, available, unavailable []string
	if p.Replicas != nil {
		registered, available, unavailable = p.Replicas.Replicas()
	}
	st.Application = ReplicaStats(registered, available, unavailable)
	if p.Self != nil {
		own := p.Self.Clone()
		own.IsCoordinatingDiscoveryServer = true
		st.Instance = &registry.LeaseView{Instance: own, RegistrationTimestamp: p.Started, LastRenewalTimestamp: now(),
			ServiceUpTimestamp: p.Started, RenewalInterval: own.LeaseInfo.RenewalInterval, Duration: own.LeaseInfo.Duration}
	}
	return st
}

func percent(a, b uint64) uint64 {
	if b == 0 {
		return 0
	}
	return a * 100 / b
}

// formatUptime is Eureka's StatusInfo.getUpTime: "HH:MM", with "1 day " or
// "N days " before.
func formatUptime(d time.Duration) string {
	days := int(d.Hours()) / 24
	s := twoDigits(int(d.Hours())%24) + ":" + twoDigits(int(d.Minutes())%60)
	switch {
	case days == 1:
		return "1 day " + s
	case days > 1:
		return strconv.Itoa(days) + " days " + s
	}
	return s
}

func twoDigits(n int) string {
	if n < 10 {
		return "0" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}
