package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/klab-dev/klab/assets/i18n"
	"github.com/klab-dev/klab/lessons"
)

// lessonSkeleton is what klab lessons new writes: a lesson that loads and
// passes klab lessons check as it is, with every part an author fills in
// present and explained, in both languages. %[1]s is the id.
const lessonSkeleton = `# A klab lesson. Every text is written in Korean (ko) and in English (en),
# each on its own. klab lessons show %[1]s --dir <this folder> prints it;
# klab lessons check %[1]s --dir <this folder> runs its solutions on a
# fresh cluster, and checks that no step passes without its act;
# klab --lessons <this folder> lists it on the home screen.
id: %[1]s
order: 1000
title:
  ko: 새 레슨
  en: A new lesson
summary:
  ko: 이 레슨에서 무엇을 하고 무엇을 보는지 한두 문장으로 씁니다.
  en: One or two sentences on what the student does and sees.
objectives:
  - ko: 이 레슨을 마치면 할 수 있는 일
    en: What the student can do at the end
minutes: 10
level: beginner
recap:
  ko: 레슨 끝에 보여 줄 정리입니다.
  en: What the lesson's end sums up.
cluster: {masters: 3, workers: 1, speed: 1}
steps:
  - id: first
    title:
      ko: 첫 단계
      en: The first step
    view: overview
    body:
      ko: |
        본문은 마크다운입니다. 해 볼 명령을 보여 주세요.

        ` + "```" + `
        klab etcdctl put /klab/%[1]s hello
        ` + "```" + `
      en: |
        The body is Markdown. Show the command to try.

        ` + "```" + `
        klab etcdctl put /klab/%[1]s hello
        ` + "```" + `
    try: [klab etcdctl put /klab/%[1]s hello]
    hints:
      - ko: 막힌 학생에게 줄 힌트입니다.
        en: A hint for a student who is stuck.
    # The check sees what the cluster did, whoever did it: a command in
    # another terminal counts. The kinds are in klab's lessons package doc.
    check:
      key-exists: {key: /klab/%[1]s, value: hello}
    solution:
      - klab etcdctl put /klab/%[1]s hello
`

func newLessonsNewCmd(dir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "new <id>",
		Short: i18n.T("lessons.cmd.new.short"),
		Long:  i18n.T("lessons.cmd.new.long"),
		Args:  exactArgs(1, "<id>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			if !lessons.ValidID(id) {
				return i18n.NewError("lessons.cmd.new.bad-id", id)
			}
			folder := *dir
			if folder == "" {
				folder = "."
			}
			if err := os.MkdirAll(folder, 0o755); err != nil {
				return i18n.Wrap(err, "lessons.cmd.new.write", folder)
			}
			path := filepath.Join(folder, id+".yaml")
			// O_EXCL: a lesson already there is never overwritten.
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if errors.Is(err, fs.ErrExist) {
				return i18n.NewError("lessons.cmd.new.exists", path)
			}
			if err != nil {
				return i18n.Wrap(err, "lessons.cmd.new.write", path)
			}
			_, werr := fmt.Fprintf(f, lessonSkeleton, id)
			if cerr := f.Close(); werr == nil {
				werr = cerr
			}
			if werr != nil {
				os.Remove(path) // half a lesson is worse than none
				return i18n.Wrap(werr, "lessons.cmd.new.write", path)
			}
			shown := folder
			if strings.ContainsAny(shown, " \t") {
				shown = "'" + shown + "'"
			}
			fmt.Fprintln(cmd.OutOrStdout(), i18n.T("lessons.cmd.new.done", path, id, shown))
			return nil
		},
	}
}
