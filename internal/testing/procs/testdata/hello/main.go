// Command hello is the smallest main package: what TestBuildOnce builds.
package main

func main() {}
