package main

import (
	"encoding/json"
	"testing"
)

// conditionMet judges status.conditions of any kind as kubectl wait does,
// so kinds that join the store (Deployment: Available) need no code here.
func TestConditionMet(t *testing.T) {
	obj := func(s string) map[string]any {
		var u map[string]any
		if err := json.Unmarshal([]byte(s), &u); err != nil {
			t.Fatal(err)
		}
		return u
	}
	deploy := obj(`{"kind":"Deployment","metadata":{"generation":2},"status":{"conditions":[
		{"type":"Available","status":"True","observedGeneration":2},
		{"type":"Progressing","status":"True","observedGeneration":1}]}}`)
	for _, tc := range []struct {
		cond, want string
		met        bool
	}{
		{"Available", "true", true},
		{"available", "True", true},
		{"Available", "false", false},
		{"Progressing", "true", false}, // observed for an older generation
		{"Complete", "true", false},
	} {
		if got := conditionMet(deploy, tc.cond, tc.want); got != tc.met {
			t.Errorf("condition=%s=%s: %v, want %v", tc.cond, tc.want, got, tc.met)
		}
	}
	if conditionMet(obj(`{"kind":"ConfigMap","data":{}}`), "Ready", "true") {
		t.Error("an object without conditions met condition=Ready")
	}
}
