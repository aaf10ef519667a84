/*
Copyright 2026 The exagent Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package procs

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// The ports FreePort chooses from when the kernel's ephemeral range cannot
// be read.
const (
	lowestPort         = 10000
	defaultEphemeralLo = 32768
)

// FreePort is a loopback port that was free a moment ago, chosen below the
// kernel's ephemeral range (net.ipv4.ip_local_port_range). Tests hold such
// a port across a process restart (the webhook port of a restarted control
// plane, a manager's listener): a port from the ephemeral range can be
// taken in between as the local end of any outgoing connection on the
// machine, and the restarted process then fails with "address already in
// use". Below the range only another listener can take it.
func FreePort() (int, error) {
	hi := ephemeralLow() - 1
	var last error
	for range 64 {
		port := lowestPort + rand.IntN(hi-lowestPort+1)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			last = err
			continue
		}
		_ = l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("finding a free port below %d: %w", hi+1, last)
}

// ephemeralLow is the first port of the kernel's ephemeral range.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return defaultEphemeralLo
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return defaultEphemeralLo
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil || lo <= lowestPort+1000 {
		return defaultEphemeralLo
	}
	return lo
}
