package main

import "fmt"

func runBench(args []string) error {
	return fmt.Errorf("no bench command yet")
}
