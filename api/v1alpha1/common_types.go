package v1alpha1

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// name of the referenced object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// SecretKeySelector selects one key of a Secret in the same namespace.
type SecretKeySelector struct {
	// name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// key within the Secret's data.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// Actor is an authenticated identity as the apiserver saw it, stamped by the
// admission webhook from the request's userInfo. Clients never author it.
type Actor struct {
	// username of the authenticated user.
	// +required
	// +kubebuilder:validation:MaxLength=512
	Username string `json:"username"`
	// uid of the authenticated user, when the authenticator provides one.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	UID string `json:"uid,omitempty"`
	// groups of the authenticated user.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=512
	// +listType=atomic
	Groups []string `json:"groups,omitempty"`
	// impersonated is true when the request was made by impersonation; the
	// impersonator is recorded in impersonatedBy.
	// +optional
	Impersonated bool `json:"impersonated,omitempty"`
	// impersonatedBy is the username that impersonated this actor.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	ImpersonatedBy string `json:"impersonatedBy,omitempty"`
}
