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
	"errors"
	"fmt"
	"strings"
	"testing"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestCheckBedrockEndpoint: only Bedrock runtime's own names, for the
// model's own region, are a baseURL the manager's signed request may go
// to; hosts under amazonaws.com that an AWS customer controls are not.
func TestCheckBedrockEndpoint(t *testing.T) {
	tests := map[string]struct {
		url, region string
		wantOK      bool
	}{
		"regional":                        {"https://bedrock-runtime.us-east-1.amazonaws.com", "us-east-1", true},
		"regional with a slash":           {"https://bedrock-runtime.us-east-1.amazonaws.com/", "us-east-1", true},
		"regional on :443":                {"https://bedrock-runtime.eu-west-3.amazonaws.com:443", "eu-west-3", true},
		"regional, upper case":            {"https://Bedrock-Runtime.US-EAST-1.amazonaws.com", "us-east-1", true},
		"fips":                            {"https://bedrock-runtime-fips.us-gov-west-1.amazonaws.com", "us-gov-west-1", true},
		"vpc endpoint":                    {"https://vpce-0abc-1234.bedrock-runtime.us-east-1.vpce.amazonaws.com", "us-east-1", true},
		"zonal vpc endpoint":              {"https://vpce-0a1b2c3d4e5f60718-abcdefgh-us-east-1a.bedrock-runtime.us-east-1.vpce.amazonaws.com", "us-east-1", true},
		"china":                           {"https://bedrock-runtime.cn-north-1.amazonaws.com.cn", "cn-north-1", true},
		"s3 website bucket":               {"https://evil.s3-website-us-east-1.amazonaws.com", "us-east-1", false},
		"api gateway":                     {"https://abc.execute-api.us-east-1.amazonaws.com", "us-east-1", false},
		"an AWS host's suffix":            {"https://bedrock-runtime.us-east-1.amazonaws.com.evil.com", "us-east-1", false},
		"a prefix before the service":     {"https://evil.bedrock-runtime.us-east-1.amazonaws.com", "us-east-1", false},
		"vpce of another service":         {"https://vpce-0abc-1234.execute-api.us-east-1.vpce.amazonaws.com", "us-east-1", false},
		"vpce with a dotted id":           {"https://a.vpce-0abc-1234.bedrock-runtime.us-east-1.vpce.amazonaws.com", "us-east-1", false},
		"another region than the model's": {"https://bedrock-runtime.eu-west-1.amazonaws.com", "us-east-1", false},
		"a bogus region":                  {"https://bedrock-runtime.evil-region-1.amazonaws.com", "evil-region-1", false},
		"a region of two digits":          {"https://bedrock-runtime.us-east-10.amazonaws.com", "us-east-10", false},
		"china under .com":                {"https://bedrock-runtime.cn-north-1.amazonaws.com", "cn-north-1", false},
		"the control plane":               {"https://bedrock.us-east-1.amazonaws.com", "us-east-1", false},
		"dual-stack api.aws":              {"https://bedrock-runtime.us-east-1.api.aws", "us-east-1", false},
		"plain http":                      {"http://bedrock-runtime.us-east-1.amazonaws.com", "us-east-1", false},
		"another port":                    {"https://bedrock-runtime.us-east-1.amazonaws.com:8443", "us-east-1", false},
		"user info":                       {"https://me@bedrock-runtime.us-east-1.amazonaws.com", "us-east-1", false},
		"a path":                          {"https://bedrock-runtime.us-east-1.amazonaws.com/proxy", "us-east-1", false},
		"a query":                         {"https://bedrock-runtime.us-east-1.amazonaws.com?x=1", "us-east-1", false},
		"loopback":                        {"https://127.0.0.1", "us-east-1", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			why := CheckBedrockEndpoint(tc.url, tc.region)
			if (why == "") != tc.wantOK {
				t.Errorf("CheckBedrockEndpoint(%q, %q) = %q, want accepted=%v", tc.url, tc.region, why, tc.wantOK)
			}
		})
	}
}

// TestNewBedrockRefusesEndpoint: the provider refuses an endpoint the
// rule refuses before it loads anything or sends a request (an Agent
// admitted before the rule), as a ConfigError naming spec.model.baseURL.
func TestNewBedrockRefusesEndpoint(t *testing.T) {
	_, err := NewBedrock(BedrockConfig{Region: "us-east-1", Model: "m", BaseURL: "https://evil.s3-website-us-east-1.amazonaws.com",
		Credentials: testAWS})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "spec.model.baseURL" || ce.Reason != exagentv1.ReasonInvalidConfiguration {
		t.Fatalf("err = %v, want a ConfigError on spec.model.baseURL", err)
	}
}

// TestAWSConfigCacheBound: the per-region configuration cache takes only
// region names, and no more than maxAWSConfigs of them however many
// distinct names Agents bring; a region past the bound still works.
func TestAWSConfigCacheBound(t *testing.T) {
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for _, bogus := range []string{"evil", "us-east-1.evil.com", strings.Repeat("a", 4096), "us-east-99"} {
		var ce *ConfigError
		if _, err := defaultAWSConfig(bogus); !errors.As(err, &ce) || ce.Field != "spec.model.region" {
			t.Errorf("defaultAWSConfig(%.20q) = %v, want a ConfigError on spec.model.region", bogus, err)
		}
	}
	var names []string
	for _, p := range []string{"us", "eu", "ap", "sa", "ca", "me", "af", "il", "mx", "us-gov"} {
		for _, d := range []string{"east", "west", "north", "south", "central", "northeast", "northwest", "southeast", "southwest"} {
			for n := 1; n <= 9; n++ {
				names = append(names, fmt.Sprintf("%s-%s-%d", p, d, n))
			}
		}
	}
	names = names[:maxAWSConfigs+16] // past the bound, and not more: each load reads the environment
	for _, r := range names {
		cfg, err := defaultAWSConfig(r)
		if err != nil || cfg.Region != r {
			t.Fatalf("defaultAWSConfig(%q) = region %q, %v", r, cfg.Region, err)
		}
	}
	if n := cachedAWSConfigs(); n > maxAWSConfigs {
		t.Errorf("the cache holds %d regions after %d distinct ones, want at most %d", n, len(names), maxAWSConfigs)
	}
}
