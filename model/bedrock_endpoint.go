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

package model

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// Where a Bedrock request may go. The request is SigV4-signed with the
// manager's AWS identity and carries its access key id and session token,
// replayable for minutes: it must reach Bedrock itself. "Some host under
// amazonaws.com" is not that — an S3 website bucket
// (name.s3-website-us-east-1.amazonaws.com), an API Gateway stage
// (id.execute-api.us-east-1.amazonaws.com) or an ELB name are hosts under
// amazonaws.com that any AWS customer, so any tenant, controls. Only the
// Bedrock runtime service's own names are accepted, for the model's own
// region:
//
//	bedrock-runtime.REGION.amazonaws.com          the regional endpoint
//	bedrock-runtime-fips.REGION.amazonaws.com     its FIPS endpoint
//	vpce-ID[-AZ].bedrock-runtime.REGION.vpce.amazonaws.com   an interface VPC endpoint
//
// with .amazonaws.com.cn for the China regions (cn-*). Webhook and
// provider both call CheckBedrockEndpoint, so an Agent admitted before
// this rule (or past a bypassed webhook) is refused before any request.

// awsRegionRE is a real AWS region name, strictly: a partition prefix
// AWS uses, a compass direction, one digit. It is a bounded set (a few
// thousand names at most), which is what bounds the per-region
// configuration cache (awsConfigs) against a tenant naming arbitrary
// strings.
var awsRegionRE = regexp.MustCompile(`^(us|eu|ap|sa|ca|me|af|il|mx|cn|us-gov|us-iso|us-isob|us-isof|eu-isoe|eusc-de)-` +
	`(east|west|north|south|central|northeast|northwest|southeast|southwest)-[1-9]$`)

// vpceLabelRE is the first label of an interface VPC endpoint's DNS name:
// vpce-<endpoint id>-<suffix>, and for a zonal name the Availability
// Zone. The rest of the name (bedrock-runtime.REGION.vpce.amazonaws.com)
// is AWS's own zone, naming Bedrock's endpoint service.
var vpceLabelRE = regexp.MustCompile(`^vpce-[0-9a-z]{1,24}-[0-9a-z]{1,16}(-[a-z]{2}(-[a-z]+)+-[1-9][a-z])?$`)

// AWSRegion reports whether region is an AWS region name by awsRegionRE.
func AWSRegion(region string) bool { return awsRegionRE.MatchString(region) }

// CheckBedrockEndpoint says why raw may not be the baseURL of a Bedrock
// model of region ("" when it may): an https URL with no credentials,
// query or fragment, on port 443, whose host is one of the Bedrock
// runtime endpoints above for that same region.
func CheckBedrockEndpoint(raw, region string) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Sprintf("is not a URL: %v", err)
	case u.Scheme != "https":
		return "must be https"
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
		return "must be a plain https endpoint, without credentials, query or fragment"
	case u.Port() != "" && u.Port() != "443":
		return "must use port 443"
	case u.Path != "" && u.Path != "/":
		return "must have no path: the SDK adds Converse's"
	case !AWSRegion(region):
		return fmt.Sprintf("cannot be checked: region %q is not an AWS region", region)
	}
	host := strings.ToLower(u.Hostname())
	domain := ".amazonaws.com"
	if strings.HasPrefix(region, "cn-") {
		domain = ".amazonaws.com.cn"
	}
	switch {
	case host == "bedrock-runtime."+region+domain, host == "bedrock-runtime-fips."+region+domain:
		return ""
	case strings.HasSuffix(host, ".bedrock-runtime."+region+".vpce"+domain):
		if id := strings.TrimSuffix(host, ".bedrock-runtime."+region+".vpce"+domain); vpceLabelRE.MatchString(id) {
			return ""
		}
	}
	return fmt.Sprintf("host %q is not a Bedrock runtime endpoint of region %s: only bedrock-runtime.%s%s, "+
		"bedrock-runtime-fips.%s%s or an interface VPC endpoint vpce-….bedrock-runtime.%s.vpce%s are accepted, "+
		"because the request is signed with the manager's AWS identity", host, region, region, domain, region, domain, region, domain)
}
