package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/collegematch/matching/internal/auth"
)

func init() {
	register("token", command{
		usage: "token --student UUID [--service] [--ttl 1h]",
		help:  "mint a development token signed with AUTH_HS256_SECRET",
		run:   runToken,
	})
}

func runToken(_ context.Context, e env, args []string) error {
	fs := e.flagSet("token")
	student := fs.String("student", "", "the student's UUID (the token's sub)")
	service := fs.Bool("service", false, "add the matching:service scope (act for any student)")
	ttl := fs.Duration("ttl", time.Hour, "lifetime of the token")
	if err := fs.Parse(args); err != nil {
		return usageErr("%v", err)
	}
	if *student == "" && *service {
		*student = "backend-service"
	}
	if _, err := uuid.Parse(*student); err != nil && !*service {
		return usageErr("--student must be a UUID")
	}
	if *ttl <= 0 {
		return usageErr("--ttl must be positive")
	}
	if *ttl > e.cfg.MaxTokenLifetime {
		return usageErr("--ttl must be at most %s, the longest lifetime the API accepts (AUTH_MAX_TOKEN_LIFETIME)", e.cfg.MaxTokenLifetime)
	}
	if len(e.cfg.HS256Secret) == 0 {
		return errors.New("AUTH_HS256_SECRET is not set; development tokens are signed with it")
	}
	tok, err := auth.MintHS256(e.cfg.HS256Secret, auth.MintOptions{
		Subject: *student, Service: *service, TTL: *ttl, Issuer: e.cfg.Issuer, Audience: e.cfg.Audience,
	})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(e.stdout, tok)
	return err
}
