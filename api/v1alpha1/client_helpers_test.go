package v1alpha1_test

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

func clientNegotiator() runtime.NegotiatedSerializer {
	return serializer.NewCodecFactory(runtime.NewScheme()).WithoutConversion()
}

func discoveryFor(cfg *rest.Config) *discovery.DiscoveryClient {
	return discovery.NewDiscoveryClientForConfigOrDie(cfg)
}
