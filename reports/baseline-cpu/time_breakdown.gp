# time_breakdown.gp — tpbench report chart "Where does the time go"
# Data: time_breakdown.dat. Redraw from this directory: gnuplot time_breakdown.gp
# (writes time_breakdown.png and time_breakdown.svg).
set encoding utf8
set terminal pngcairo noenhanced size 1100,620 font 'Sans,11'
set output 'time_breakdown.png'
set label 101 "Where does the time go" at screen 0.5, screen 0.964516 center font ',14'
set label 102 "seconds per epoch (mean over epochs, median over repeats; error bars: the wall time's min to max over repeats); other = wall - compute -" at screen 0.5, screen 0.925806 center font ',10' textcolor rgb '#444444'
set label 103 "communication; batch 128/device, 4096 samples/epoch, 2 epochs (1 other config not shown: report --where KEY=VALUE draws another)" at screen 0.5, screen 0.898387 center font ',10' textcolor rgb '#444444'
set tmargin 6
set grid lc rgb '#dddddd'
set key outside right top Left reverse
set ylabel 'seconds per epoch (s)'
set xlabel 'ranks N, grouped by strategy' offset 0,-1.2
set style data histograms
set style histogram rowstacked title offset 0,0.6
set style fill solid 0.9 border rgb '#555555'
set boxwidth 0.75
set yrange [0:*]
set grid noxtics ytics
set bmargin 6
plot newhistogram "single" lt 1 at 0, 'time_breakdown.dat' index 0 using 2:xtic(1) title 'compute' lc rgb '#4c72b0', \
     '' index 0 using 3 title 'communication' lc rgb '#dd8452', \
     '' index 0 using 4 title 'other' lc rgb '#c7c7c7', \
     newhistogram "param_server" lt 1 at 2, 'time_breakdown.dat' index 1 using 2:xtic(1) notitle lc rgb '#4c72b0', \
     '' index 1 using 3 notitle lc rgb '#dd8452', \
     '' index 1 using 4 notitle lc rgb '#c7c7c7', \
     newhistogram "ring_all_reduce" lt 1 at 7, 'time_breakdown.dat' index 2 using 2:xtic(1) notitle lc rgb '#4c72b0', \
     '' index 2 using 3 notitle lc rgb '#dd8452', \
     '' index 2 using 4 notitle lc rgb '#c7c7c7', \
     newhistogram "allreduce" lt 1 at 12, 'time_breakdown.dat' index 3 using 2:xtic(1) notitle lc rgb '#4c72b0', \
     '' index 3 using 3 notitle lc rgb '#dd8452', \
     '' index 3 using 4 notitle lc rgb '#c7c7c7', \
     newhistogram "ddp" lt 1 at 17, 'time_breakdown.dat' index 4 using 2:xtic(1) notitle lc rgb '#4c72b0', \
     '' index 4 using 3 notitle lc rgb '#dd8452', \
     '' index 4 using 4 notitle lc rgb '#c7c7c7', \
     newhistogram "data_parallel" lt 1 at 22, 'time_breakdown.dat' index 5 using 2:xtic(1) notitle lc rgb '#4c72b0', \
     '' index 5 using 3 notitle lc rgb '#dd8452', \
     '' index 5 using 4 notitle lc rgb '#c7c7c7', \
     'time_breakdown.dat' index 0 using ($0+0):5:6:7 title 'wall min-max' with yerrorbars lc rgb '#222222' lw 1.5 pt 7 ps 0.4, \
     'time_breakdown.dat' index 1 using ($0+2):5:6:7 notitle with yerrorbars lc rgb '#222222' lw 1.5 pt 7 ps 0.4, \
     'time_breakdown.dat' index 2 using ($0+7):5:6:7 notitle with yerrorbars lc rgb '#222222' lw 1.5 pt 7 ps 0.4, \
     'time_breakdown.dat' index 3 using ($0+12):5:6:7 notitle with yerrorbars lc rgb '#222222' lw 1.5 pt 7 ps 0.4, \
     'time_breakdown.dat' index 4 using ($0+17):5:6:7 notitle with yerrorbars lc rgb '#222222' lw 1.5 pt 7 ps 0.4, \
     'time_breakdown.dat' index 5 using ($0+22):5:6:7 notitle with yerrorbars lc rgb '#222222' lw 1.5 pt 7 ps 0.4
set terminal svg noenhanced size 1100,620 dynamic font 'Sans,11' background rgb 'white'
set output 'time_breakdown.svg'
replot
set output
